"""Two verdicts reproduced from their master seeds on the GPU (run it on the H200 device machine).

    python3 benchmarks/reproduce_gpu.py --out OUT_DIR [--cases L1_19_relu_cuda L1_19_relu_shape_hack] [--device cuda]

For each case (by default one correct kernel and one hack, both on KernelBench L1/19 ReLU): evaluate it as the site
does (the harness draws a fresh master seed and publishes its sha256 as seeds_digest), then "reveal" the master and
evaluate again with `seeds` set to it, as `manage.py reproduce` does, and compare the per-distribution pass/fail and
error figures (harness/orchestrator/reproduce.py). With --device cpu on a machine without a GPU the same script checks
the CPU path (L1/19's full-size tensors need about 13 GB of memory there). Writes OUT_DIR/reproduce_gpu.json and
prints a Markdown table and each comparison. Imports no Django.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evaluator.harness import seeds  # noqa: E402
from evaluator.harness.orchestrator import reproduce  # noqa: E402
from evaluator.runner import InfraError, run_evaluation  # noqa: E402

CASES = {
    "L1_19_relu_cuda": ("L1_19_ReLU.py", "L1_19_relu_cuda.py"),
    "L1_19_relu_shape_hack": ("L1_19_ReLU.py", "L1_19_relu_shape_hack.py"),
    "L1_1_matmul_tiled_cuda": ("L1_1_Square_matrix_multiplication_.py", "L1_1_matmul_tiled_cuda.py"),
}


def _run(case: str, args: argparse.Namespace, **options: object) -> dict:
    problem, kernel = CASES[case]
    started = time.time()
    try:
        record = run_evaluation(
            problem_source=(HERE / "problems" / problem).read_text(),
            kernel_source=(HERE / "kernels" / kernel).read_text(),
            device=args.device,
            timeout=args.timeout,
            work_root=args.work_root,
            compile_cache_dir=args.cache,
            options={"hardware": args.hardware, **options},
        )
    except InfraError as exc:
        record = {"status": "infra_error", "error": str(exc), "distributions": []}
    record["_wall_s"] = round(time.time() - started, 1)
    return record


def _dists(record: dict) -> str:
    return "".join(
        "s" if d.get("skipped") else ("P" if d.get("passed") else ("F" if d.get("passed") is False else "-"))
        for d in record.get("distributions", [])
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cases", nargs="+", default=["L1_19_relu_cuda", "L1_19_relu_shape_hack"], choices=CASES)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--hardware", default="h200")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--work-root", type=Path, default=Path(tempfile.gettempdir()) / "kbv-reproduce")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kbv-reproduce-cache")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for case in args.cases:
        original = _run(case, args)
        master = original.pop(seeds.RECORD_KEY, None)
        committed = (original.get("environment") or {}).get("seeds_digest")
        if not master or committed != seeds.digest(master):
            results.append({"case": case, "original": original, "error": "no master seed or digest mismatch"})
            continue
        again = _run(case, args, seeds=master)
        again.pop(seeds.RECORD_KEY, None)
        diffs = reproduce.differences(original, again)
        results.append(
            {
                "case": case,
                "master_seed": master,
                "seeds_digest": committed,
                "identical": not diffs,
                "differences": [{"figure": d.figure, "before": d.before, "after": d.after} for d in diffs],
                "original": original,
                "reproduced": again,
                "report": reproduce.report(original, again),
            }
        )
    (args.out / "reproduce_gpu.json").write_text(json.dumps(results, indent=1, default=str))
    print("| case | correct | D1-D4 recorded | D1-D4 reproduced | identical figures | speedup recorded / again |")
    print("|---|---|---|---|---|---|")
    for r in results:
        o, a = r.get("original", {}), r.get("reproduced", {})
        print(
            f"| {r['case']} | {o.get('correct')} | {_dists(o)} | {_dists(a)} | {r.get('identical', r.get('error'))} "
            f"| {o.get('speedup')} / {a.get('speedup')} |"
        )
    for r in results:
        if "report" in r:
            print(f"\n### {r['case']}\n\n```\n{r['report']}\n```")
    return 0 if all(r.get("identical") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
