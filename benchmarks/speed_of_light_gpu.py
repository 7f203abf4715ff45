"""On a GPU: speed-of-light fractions and launched kernels of a few real KernelBench cases, and a decoy
(a load_inline ReLU that is built and never launched), plus one profile trace (harness option `profile_dir`).

    python3 benchmarks/speed_of_light_gpu.py --out OUT_DIR [--cases NAME ...] [--device cuda]

The load_inline kernels are built first, all at once (compile-only evaluations filling one compile cache: CPU
work), then evaluated one at a time. Writes OUT_DIR/speed_of_light_gpu.json and prints a Markdown table.
Imports no Django.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evaluator.runner import InfraError, run_evaluation  # noqa: E402

CASES = {
    "L1_19_relu_cuda": ("L1_19_ReLU.py", "L1_19_relu_cuda.py"),
    "L1_19_relu_decoy_cuda": ("L1_19_ReLU.py", "L1_19_relu_decoy_cuda.py"),
    "L1_1_matmul_torch": ("L1_1_Square_matrix_multiplication_.py", "L1_1_matmul_torch.py"),
    "L1_1_matmul_tiled_cuda": ("L1_1_Square_matrix_multiplication_.py", "L1_1_matmul_tiled_cuda.py"),
    "L2_1_conv_relu_bias_cuda": ("L2_1_Conv2D_ReLU_BiasAdd.py", "L2_1_conv_relu_bias_cuda.py"),
}


def _top(ran: dict, side: str) -> list:
    kernels = (ran.get(side) or {}).get("kernels") or []
    return [(k["name"][:60], k["count"], round(k["share"] or 0, 3)) for k in kernels[:3]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sol-"))

    def evaluate(name: str, options: dict) -> dict:
        problem, kernel = CASES[name]
        try:
            return run_evaluation(
                problem_source=(HERE / "problems" / problem).read_text(),
                kernel_source=(HERE / "kernels" / kernel).read_text(),
                device=args.device,
                timeout=args.timeout,
                work_root=work / "work",
                compile_cache_dir=work / "cache",
                options=options,
            )
        except InfraError as exc:
            return {"status": "infra_error", "error": str(exc)}

    started = time.time()
    with ThreadPoolExecutor(max_workers=len(args.cases)) as pool:
        builds = list(pool.map(lambda name: evaluate(name, {"compile_only": True}), args.cases))
    print(f"built {len(builds)} kernels in {time.time() - started:.1f} s: {[b.get('status') for b in builds]}")
    results = []
    for n, name in enumerate(args.cases):
        options: dict = {"hardware": "h200", "timing_budget_s": 10.0}
        if n == 0:
            options["profile_dir"] = str(args.out / f"profile-{name}")
        started = time.time()
        record = evaluate(name, options)
        record["_case"], record["_wall_s"] = name, round(time.time() - started, 1)
        results.append(record)
        sol = record.get("speed_of_light") or {}
        ran = record.get("launched_kernels") or {}
        print(
            f"| {name} | {record.get('status')} {record.get('correct')} | {record.get('speedup')} "
            f"| {sol.get('flops')} | {sol.get('bytes')} | {sol.get('bound_ms')} ({sol.get('limit')}) "
            f"| {(record.get('timing') or {}).get('candidate', {}).get('median_ms')} | {sol.get('fraction')} "
            f"| {ran.get('custom_launched')} | {_top(ran, 'candidate')} | {_top(ran, 'baseline')} "
            f"| {ran.get('traces')} "
            f"| {record.get('error', '')[:200]} |",
            flush=True,
        )
    (args.out / "speed_of_light_gpu.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
