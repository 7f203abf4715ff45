"""GPU evidence for the evaluation harness on real KernelBench problems (run it on the H200 device machine).

    python3 benchmarks/harness_gpu.py --out OUT_DIR [--cases NAME ...] [--repeat-case NAME --repeats 3]

Phase 1 builds every load_inline kernel in parallel (compile_only evaluations fill the compile cache); phase 2 runs
the full protocol (production settings, inputs generated on the device) one evaluation at a time, so timings never
share the GPU. Writes OUT_DIR/harness_gpu.json and prints a Markdown table. Imports no Django.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    "L1_19_relu_shape_hack": ("L1_19_ReLU.py", "L1_19_relu_shape_hack.py"),
    "L1_1_matmul_torch": ("L1_1_Square_matrix_multiplication_.py", "L1_1_matmul_torch.py"),
    "L1_1_matmul_tiled_cuda": ("L1_1_Square_matrix_multiplication_.py", "L1_1_matmul_tiled_cuda.py"),
    "L2_1_conv_relu_bias_cuda": ("L2_1_Conv2D_ReLU_BiasAdd.py", "L2_1_conv_relu_bias_cuda.py"),
    "L3_1_mlp_fused_cuda": ("L3_1_MLP.py", "L3_1_mlp_fused_cuda.py"),
}


def _evaluate(name: str, args: argparse.Namespace, **extra: object) -> dict:
    problem, kernel = CASES[name]
    options = {"hardware": "h200", "timing_budget_s": args.timing_budget, **extra}
    started = time.time()
    try:
        record = run_evaluation(
            problem_source=(HERE / "problems" / problem).read_text(),
            kernel_source=(HERE / "kernels" / kernel).read_text(),
            device="cuda",
            timeout=args.timeout,
            work_root=args.work_root,
            compile_cache_dir=args.cache,
            options=options,
        )
    except InfraError as exc:
        record = {"status": "infra_error", "error": str(exc)}
    record["_case"] = name
    record["_wall_s"] = round(time.time() - started, 1)
    return record


def _row(r: dict) -> str:
    t = r.get("timing") or {}

    def ms(side: str) -> str:
        value = (t.get(side) or {}).get("median_ms")
        return f"{value:.4g}" if value else "-"

    def num(value: object, fmt: str = ".3f") -> str:
        return format(value, fmt) if isinstance(value, int | float) else "-"

    ci = r.get("speedup_ci") or [None, None]
    dists = "".join(
        "s" if d["skipped"] else ("P" if d["passed"] else ("F" if d["passed"] is False else "-"))
        for d in r.get("distributions", [])
    )
    failed = [c["name"] for c in r.get("checks", []) if c["passed"] is False]
    return (
        f"| {r['_case']} | {r['status']} | {r.get('correct')} | {r.get('standard_correct')} | {dists} "
        f"| {ms('baseline_tf32')} | {ms('baseline_fp32')} | {ms('candidate')} | {num(r.get('speedup'))} "
        f"[{num(ci[0])}, {num(ci[1])}] | {num(r.get('speedup_fp32'))} | {num(r.get('memory_ratio'))} "
        f"| {', '.join(failed) or '-'} | {r.get('phases', {}).get('compile', '-')} | {r['_wall_s']} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--repeat-case", default="L2_1_conv_relu_bias_cuda")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=580)
    parser.add_argument("--timing-budget", type=float, default=20.0)
    # Tensors cross processes as files: memory-backed /dev/shm where there is one.
    shm = "/dev/shm/kbv-work" if os.path.isdir("/dev/shm") else str(Path(tempfile.gettempdir()) / "kbv-work")
    parser.add_argument("--work-root", type=Path, default=Path(shm))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kbv-compile-cache")
    parser.add_argument("--no-precompile", action="store_true")
    parser.add_argument("--quick-cases", nargs="*", default=[], help="cases run with quick counts (device budget)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    os.environ.setdefault("MAX_JOBS", "4")
    results: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "compile": [], "runs": []}
    out_file = args.out / "harness_gpu.json"

    def save() -> None:
        out_file.write_text(json.dumps(results, indent=1))

    cuda_cases = [c for c in args.cases if c.endswith("_cuda")]
    if not args.no_precompile and cuda_cases:
        t0 = time.time()
        with ThreadPoolExecutor(max_workers=len(cuda_cases)) as pool:
            builds = list(pool.map(lambda c: _evaluate(c, args, compile_only=True), cuda_cases))
        for b in builds:
            print(
                f"[compile] {b['_case']}: {b['status']} cache={b.get('environment', {}).get('compile_cache')} "
                f"compile_s={b.get('phases', {}).get('compile')} {b.get('error', '')[:300]}",
                flush=True,
            )
        results["compile"] = builds
        results["compile_wall_s"] = round(time.time() - t0, 1)
        print(f"[compile] {len(cuda_cases)} kernels built in parallel in {results['compile_wall_s']} s", flush=True)
        save()
    plan = list(args.cases)
    if args.repeat_case in plan:
        plan += [args.repeat_case] * (args.repeats - 1)
    for name in plan:
        record = _evaluate(name, args, quick=True) if name in args.quick_cases else _evaluate(name, args)
        results["runs"].append(record)
        save()
        print(
            f"[{time.strftime('%H:%M:%S')}] {name}: {record['status']} correct={record.get('correct')} "
            f"speedup={record.get('speedup')} wall={record['_wall_s']}s phases={record.get('phases')} "
            f"{record.get('error', '')[:300]}",
            flush=True,
        )
    header = (
        "| case | status | correct | standard | D1-D4 | TF32 base ms | FP32 base ms | kernel ms | speedup "
        "[95% CI] | vs FP32 | mem ratio | failed checks | compile s | eval s |\n|" + "---|" * 14
    )
    print("\n" + header)
    for r in results["runs"]:
        print(_row(r))
    results["repeat_spread"] = {}
    for case in dict.fromkeys(r["_case"] for r in results["runs"]):
        reps = [r["speedup"] for r in results["runs"] if r["_case"] == case and r.get("speedup")]
        if len(reps) >= 2:
            spread = (max(reps) - min(reps)) / statistics.median(reps)
            results["repeat_spread"][case] = {"speedups": reps, "relative_spread": spread}
            print(
                f"\nrepeat spread ({case}, {len(reps)} evaluations): speedups {[round(x, 4) for x in reps]} -> "
                f"(max-min)/median = {spread:.2%}"
            )
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
