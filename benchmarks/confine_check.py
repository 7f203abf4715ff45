"""One small CUDA evaluation through the runner, printing how the orchestrator ran (environment.orchestrator), the
sandbox, the cgroup, the verdict, and every process of the evaluation with its uid and capabilities as /proc shows
them while it runs (only the launcher may be root): a first check on a GPU machine before a long run.

    python3 benchmarks/confine_check.py [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.runner import run_evaluation  # noqa: E402
from scripts.e2e.processes import Watch, table  # noqa: E402

KERNEL = (
    "import torch\nimport torch.nn as nn\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    work_root = Path(tempfile.mkdtemp(prefix="kbv-confine-check-"))
    watch = Watch(work_root, every=0.5)
    watch.start()
    done: dict = {}
    run = threading.Thread(target=lambda: done.update(record=run_evaluation(
        problem_source=(REPO / "tests" / "redteam" / "problems" / "relu.py").read_text(),
        kernel_source=KERNEL,
        device=args.device,
        timeout=300,
        work_root=work_root,
        options={"quick": True},
    )))  # fmt: skip
    run.start()
    run.join()
    processes = watch.stop()
    record = done["record"]
    env = record["environment"]
    print(
        json.dumps(
            {
                "status": record["status"],
                "correct": record["correct"],
                "error": record["error"][:300],
                "orchestrator": env.get("orchestrator"),
                "sandbox": env.get("sandbox"),
                "cgroup": (env.get("limits") or {}).get("cgroup"),
                "handover": env.get("output_handover"),
                "candidate_uid": env.get("candidate_uid"),
            },
            indent=1,
        )
    )
    print("\n".join(table(processes)))
    root = [p["role"] for p in processes if p["uid"] == 0 and p["role"] != "launcher"]
    if root:
        print(f"ROOT outside the launcher: {root}")
        return 1
    return 0 if record["status"] == "ok" and record["correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
