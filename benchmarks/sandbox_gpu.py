"""The kernel sandbox on a GPU machine (run on the H200 as root): the zero-copy hand-over through the sandbox, the
cost of the sandbox on a gigabyte problem, a hang in CUDA timing, and the per-evaluation overhead of a small bundle.

    KBV_BWRAP=/path/to/bwrap python3 benchmarks/sandbox_gpu.py --out OUT_DIR

Each evaluation is the real harness (runner -> orchestrator -> workers). Writes OUT_DIR/sandbox_gpu.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evaluator.runner import run_evaluation  # noqa: E402

TORCH_RELU = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
HANG = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    calls = 0

    def forward(self, A, B):
        ModelNew.calls += 1
        if ModelNew.calls > 40:  # past the correctness gate: hang on the host while being timed
            torch.cuda.synchronize()
            while True:
                pass
        return torch.matmul(A, B)
"""


def evaluate(name: str, problem: str, kernel: str, mode: str, work: Path, **options: object) -> dict:
    os.environ["KBV_SANDBOX"] = mode
    os.environ["KBV_SANDBOX_USER"] = "auto" if mode == "namespaces" else "off"  # "none": the kernel runs as root
    started = time.monotonic()
    record = run_evaluation(
        problem_source=(HERE / "problems" / problem).read_text(),
        kernel_source=kernel,
        device="cuda",
        timeout=300,
        work_root=work,
        compile_cache_dir=Path(tempfile.gettempdir()) / "kbv-sandbox-cache",
        options={"hardware": "h200", "timing_budget_s": 10.0, **options},
    )
    env = record.get("environment", {})
    row = {
        "case": name,
        "sandbox": env.get("sandbox"),
        "sandbox_reason": env.get("sandbox_reason"),
        "candidate_uid": env.get("candidate_uid"),
        "output_handover": env.get("output_handover"),
        "status": record.get("status"),
        "correct": record.get("correct"),
        "speedup": record.get("speedup"),
        "error": (record.get("error") or "")[:300],
        "wall_s": round(time.monotonic() - started, 2),
        "phases": record.get("phases"),
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "kbv-sandbox-work")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in ("namespaces", "none"):
        rows.append(evaluate("L1_19_relu_torch (6.4 GB tensors)", "L1_19_ReLU.py", TORCH_RELU, mode, args.work))
        matmul = (HERE / "kernels" / "L1_1_matmul_torch.py").read_text()
        rows.append(evaluate("L1_1_matmul_torch", "L1_1_Square_matrix_multiplication_.py", matmul, mode, args.work))
    rows.append(
        evaluate(
            "hang in CUDA timing (L1_1)",
            "L1_1_Square_matrix_multiplication_.py",
            HANG,
            "namespaces",
            args.work,
            hang_grace_s=10.0,
        )
    )
    (args.out / "sandbox_gpu.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
