"""One small CUDA evaluation through the runner, printing how the harness process ran (environment.orchestrator),
the sandbox, the cgroup and the verdict: a first check on a GPU machine before a long run.

    python3 benchmarks/confine_check.py [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.runner import run_evaluation  # noqa: E402

KERNEL = (
    "import torch\nimport torch.nn as nn\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    record = run_evaluation(
        problem_source=(REPO / "tests" / "redteam" / "problems" / "relu.py").read_text(),
        kernel_source=KERNEL,
        device=args.device,
        timeout=300,
        work_root=Path(tempfile.mkdtemp(prefix="kbv-confine-check-")),
        options={"quick": True},
    )
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
            },
            indent=1,
        )
    )
    return 0 if record["status"] == "ok" and record["correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
