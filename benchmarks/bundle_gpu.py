"""Throughput: evaluate a whole KernelBench bundle (one kernel per core problem) on one machine's GPUs.

    python3 benchmarks/bundle_gpu.py --out OUT_DIR [--gpus 0 1] [--slots 4] [--limit N] [--deadline SECONDS]
    python3 benchmarks/bundle_gpu.py --out OUT_DIR --only L2/12 L2/1 L3/5 --repeats 5 --slots 1   # spread
    python3 benchmarks/bundle_gpu.py --out OUT_DIR --only L2/12 --repeats 5 --slots 1 --process-pairs 1  # before
    python3 benchmarks/bundle_gpu.py --out OUT_DIR --only L2/12 --repeats 5 --slots 1 --process-pairs 2  # after
    python3 benchmarks/bundle_gpu.py --out OUT_DIR --only L2/14 L3/20 L1/68 --repeats 5 --slots 4  # 4 at once

The bundle: the load_inline kernels in benchmarks/kernels where we have one, and the reference wrapped as
`class ModelNew(Model)` for every other problem (levels 1-3 of the shipped problems.jsonl: 250 problems).

The layout is what a GPU machine runs in production: per GPU, `--slots` evaluations at once (a Celery worker with
`-c SLOTS` pinned by CUDA_VISIBLE_DEVICES), all pulling from one queue; they share the GPU for correctness and take
turns for timing through the harness's GPU lock. load_inline kernels are built first by `--compile-jobs`
compile-only evaluations in parallel (CPU work, filling the compile cache) while the GPU slots already evaluate the
other kernels; each built kernel then joins the queue. Longest-expected problems go first (from the committed
baseline sweep), so the end of the run is not one long evaluation alone on an idle machine.

Writes OUT_DIR/TAG.jsonl (one line per evaluation, as soon as it ends) and OUT_DIR/TAG_summary.json: wall
time, where the time went (compile, correctness, timing, waiting for the GPU lock, waiting in the queue), counts by
status, what the exclusive GPU hold was spent on (`exclusive_timing_share`: the timed loops' share of it; process
pairs start with the hold given back, `pair_starts_under_exclusive_lock` counts any that did not), how many
evaluations came out `timing unstable`, and for repeated kernels whether every repeat is within 5 % (2 %) of their
median and every interval above 0 and under 2x wide. Imports no Django.

A run longer than one sitting can be split: with `--state DIR` the rows go to DIR (kept between invocations) and a
second invocation with the same DIR and tag evaluates only what the first did not finish; the summary then adds up
the sittings' wall times (each sitting's own figure is in TAG_runs.json).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from benchmarks.bundle_summary import launched_summary, summarise  # noqa: E402
from evaluator.runner import InfraError, run_evaluation  # noqa: E402

PROBLEMS = REPO / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"
# expected TF32 times, for the schedule: a later sweep's figure replaces an earlier one's
SWEEPS = ("baselines-h200", "baselines-h200-l3-36-50", "baselines-h200-lead")
BASELINES = [HERE / "results" / f"{name}.jsonl" for name in SWEEPS]
# Correct load_inline kernels we have, by (level, problem id).
KERNELS = {
    (1, 1): "L1_1_matmul_tiled_cuda.py",
    (1, 19): "L1_19_relu_cuda.py",
    (2, 1): "L2_1_conv_relu_bias_cuda.py",
    (3, 1): "L3_1_mlp_fused_cuda.py",
}
WRAPPER = """

# The reference itself, submitted as the kernel (bundle throughput benchmark).
class ModelNew(Model):
    pass
"""


def load_bundle(levels: list[int]) -> list[dict[str, Any]]:
    expected = {}
    for sweep in (path for path in BASELINES if path.exists()):
        for line in sweep.read_text().splitlines():
            row = json.loads(line)
            ms = ((row.get("precisions") or {}).get("tf32") or {}).get("median_ms")
            if ms:
                expected[(row.get("level"), row.get("problem_id"))] = float(ms)
    bundle = []
    for line in PROBLEMS.read_text().splitlines():
        p = json.loads(line)
        if p["level"] not in levels:
            continue
        key = (p["level"], p["problem_id"])
        kernel = KERNELS.get(key)
        bundle.append(
            {
                "key": f"L{key[0]}/{key[1]}",
                "level": key[0],
                "problem": p["source"],
                "kernel": (HERE / "kernels" / kernel).read_text() if kernel else p["source"] + WRAPPER,
                "kind": "load_inline" if kernel else "reference_wrapper",
                "expected_ms": expected.get(key),
            }
        )
    known = [b["expected_ms"] for b in bundle if b["expected_ms"]]
    middle = statistics.median(known) if known else 1.0
    bundle.sort(key=lambda b: -(b["expected_ms"] or middle))
    return bundle


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.jobs: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.lock = threading.Lock()
        self.out = args.state / f"{args.tag}.jsonl"
        self.records: list[dict[str, Any]] = []
        if self.out.exists():  # an earlier sitting of the same run (--state)
            self.records = [json.loads(line) for line in self.out.read_text().splitlines() if line.strip()]
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def evaluate(self, item: dict[str, Any], gpu: str, prestart: bool = False, **extra: Any) -> dict[str, Any]:
        options = {
            "hardware": "h200",
            "gpu_lock_dir": str(self.args.locks),
            "paper_loop": self.args.paper_loop,
            "quick": self.args.quick,
            **{k: v for k, v in self._timing_options().items() if v is not None},
            **extra,
        }
        started = time.monotonic()
        try:
            record = run_evaluation(
                problem_source=item["problem"],
                kernel_source=item["kernel"],
                device=self.args.device,
                timeout=self.args.timeout,
                work_root=self.args.work_root,
                compile_cache_dir=self.args.cache,
                options=options,
                env={"CUDA_VISIBLE_DEVICES": gpu},
                prestart=prestart,
            )
        except InfraError as exc:
            record = {"status": "infra_error", "error": str(exc)}
        record["_wall_s"] = round(time.monotonic() - started, 2)
        return record

    def _timing_options(self) -> dict[str, Any]:
        """The timing options for short problems, where given (else the harness's defaults)."""
        return {
            "process_pairs": self.args.process_pairs,
            "max_process_pairs": self.args.max_process_pairs,
            "pairs_below_ms": self.args.pairs_below_ms,
            "target_block_ms": self.args.target_block_ms,
            "launch_bound_pairs": self.args.launch_bound_pairs,
            "placement_pairs": self.args.placement_pairs,
            "placement_beside_gib": self.args.placement_beside_gib,
            "pin_timing_cpu": {"on": True, "off": False}.get(self.args.pin_cpu),
            "ci_target": self.args.ci_target,
            "timing_budget_s": self.args.timing_budget,
            "min_calls": self.args.min_calls,
            "min_timed_ms": self.args.min_timed_ms,
        }

    def compile(self, items: list[dict[str, Any]]) -> None:
        record = self.evaluate(items[0], self.args.gpus[0], compile_only=True)
        self.log(items[0], record, gpu=self.args.gpus[0], phase="compile", queued_s=0.0)
        for item in items:
            item["enqueued"] = time.monotonic()
            self.jobs.put(item)

    def slot(self, gpu: str) -> None:
        while True:
            item = self.jobs.get()
            if item is None:
                return
            if self.elapsed() > self.args.deadline:
                self.log(item, {"status": "not_started", "_wall_s": 0}, gpu=gpu, phase="skipped", queued_s=0.0)
                continue
            queued = time.monotonic() - item["enqueued"]
            record = self.evaluate(item, gpu, prestart=self.args.prestart)
            self.log(item, record, gpu=gpu, phase="evaluate", queued_s=queued)

    def log(self, item: dict[str, Any], record: dict[str, Any], *, gpu: str, phase: str, queued_s: float) -> None:
        timing = record.get("timing") or {}
        sides = {
            side: {k: (timing.get(side) or {}).get(k) for k in ("median_ms", "calls", "rse", "rse_median")}
            for side in ("candidate", "baseline_tf32", "baseline_fp32")
        }
        row = {
            "key": item["key"],
            "kind": item["kind"],
            "phase": phase,
            "gpu": gpu,
            "status": record.get("status"),
            "correct": record.get("correct"),
            "speedup": record.get("speedup"),
            "speedup_ci": record.get("speedup_ci"),
            "speedup_fp32": record.get("speedup_fp32"),
            "tf32_ms": (timing.get("baseline_tf32") or {}).get("median_ms"),
            "kernel_ms": (timing.get("candidate") or {}).get("median_ms"),
            "fp32_ms": (timing.get("baseline_fp32") or {}).get("median_ms"),
            "timing_sides": sides if timing else None,
            "paper_loop": timing.get("paper_loop"),
            "pairs": timing.get("pairs"),  # per process pair: medians and speedup
            "block_calls": timing.get("block_calls"),
            "ci_method": timing.get("ci_method"),
            "wallclock": timing.get("wallclock"),  # the cross-check's overheads, excess and measured jitter
            "host_fraction": timing.get("host_fraction"),
            "cpu": timing.get("cpu"),  # the leased timing CPU and the threads pinned to it
            "candidate_cpu": timing.get("candidate_cpu"),  # the kernel's CPU time while the baseline was timed
            "phases": record.get("phases"),
            "pair_starts": timing.get("pair_starts"),  # each later pair's start, and the GPU hold it ran under
            "unstable": timing.get("unstable"),
            "unstable_reason": timing.get("unstable_reason"),
            "ci_half_width": timing.get("ci_half_width"),
            "precision": timing.get("precision"),
            "sandbox": (record.get("environment") or {}).get("sandbox"),
            "handover": (record.get("environment") or {}).get("output_handover"),
            "compile_cache": (record.get("environment") or {}).get("compile_cache"),
            # what it declared and waited for in the memory ledger, and one forward's peak on each side
            "gpu_hold": (record.get("environment") or {}).get("gpu_hold"),
            "memory": record.get("memory"),
            "wall_s": record["_wall_s"],
            "queued_s": round(queued_s, 2),
            "ended_at_s": round(self.elapsed(), 2),
            "error": (record.get("error") or "")[:300],
            # Speed of light: the roofline bound, the kernel's fraction of it, and what ran on each side (top kernels)
            "speed_of_light": record.get("speed_of_light"),
            "launched": launched_summary(record.get("launched_kernels")),
        }
        with self.lock:
            self.records.append(row)
            with open(self.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
        print(
            f"[{row['ended_at_s']:7.1f}s gpu{gpu}] {row['key']:8} {phase:8} {row['status']} correct={row['correct']} "
            f"speedup={row['speedup'] and round(row['speedup'], 3)} wall={row['wall_s']}s {row['error'][:120]}",
            flush=True,
        )


def remaining(bundle: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kernels an earlier sitting did not evaluate (a kernel repeated k times needs k evaluation rows)."""
    done: dict[str, int] = {}
    for row in rows:
        if row["phase"] == "evaluate":
            done[row["key"]] = done.get(row["key"], 0) + 1
    left = []
    for item in bundle:
        if done.get(item["key"], 0) > 0:
            done[item["key"]] -= 1
        else:
            left.append(item)
    return left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--state", type=Path, help="rows accumulate here across sittings (default: --out)")
    parser.add_argument("--paper-loop", action="store_true", help="also time KernelBench's no-flush loop")
    parser.add_argument("--prestart", action="store_true", help="each slot keeps its next harness started")
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of this script, not a measurement")
    parser.add_argument("--quick", action="store_true", help="the harness's quick preset (smoke tests)")
    parser.add_argument("--gpus", nargs="+", default=["0"])
    parser.add_argument("--slots", type=int, default=4, help="concurrent evaluations per GPU")
    parser.add_argument("--compile-jobs", type=int, default=4)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--limit", type=int, default=0, help="first N problems of the (sorted) bundle only")
    parser.add_argument("--sample", type=int, default=0, help="an evenly spaced sample of N reference wrappers")
    parser.add_argument("--only", nargs="*", default=[], help="these problems only, e.g. L2/1")
    parser.add_argument("--repeats", type=int, default=1, help="evaluate each kernel this many times (spread)")
    parser.add_argument("--process-pairs", type=int, help="harness process_pairs (short problems; default 2)")
    parser.add_argument("--max-process-pairs", type=int, help="harness max_process_pairs (default 4)")
    parser.add_argument("--pairs-below-ms", type=float, help="harness pairs_below_ms (default 1.0)")
    parser.add_argument("--launch-bound-pairs", type=int, help="harness launch_bound_pairs (default 3)")
    parser.add_argument("--placement-pairs", type=int, help="harness placement_pairs (default 2; 1: off)")
    parser.add_argument("--placement-beside-gib", type=float, help="harness placement_beside_gib (default 0: any)")
    parser.add_argument("--pin-cpu", choices=["on", "off"], help="harness pin_timing_cpu (default on)")
    parser.add_argument("--target-block-ms", type=float, help="harness target_block_ms (0: fixed blocks)")
    parser.add_argument("--ci-target", type=float, help="harness ci_target (default 0.02; 0: rse_target alone)")
    parser.add_argument("--min-calls", type=int, help="harness min_calls (timed calls per side before RSE may stop)")
    parser.add_argument("--min-timed-ms", type=float, help="harness min_timed_ms (or this much timed time per side)")
    parser.add_argument("--tag", default="bundle", help="output file prefix")
    parser.add_argument("--deadline", type=float, default=1e9, help="start no evaluation after this many seconds")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--timing-budget", type=float, help="harness timing_budget_s (all pairs' timed loops)")
    parser.add_argument("--work-root", type=Path, default=Path(tempfile.gettempdir()) / "kbv-bundle-work")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kbv-compile-cache")
    parser.add_argument("--locks", type=Path, default=Path(tempfile.gettempdir()) / "kbv-gpu-locks")
    args = parser.parse_args()
    args.state = args.state or args.out
    for folder in (args.out, args.state):
        folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    os.environ.setdefault("MAX_JOBS", "4")
    bundle = load_bundle(args.levels)
    if args.only:
        bundle = [b for b in bundle if b["key"] in args.only]
    if args.sample:
        wrappers = [b for b in bundle if b["kind"] == "reference_wrapper"]
        bundle = wrappers[:: max(1, len(wrappers) // args.sample)][: args.sample]
    if args.limit:
        bundle = bundle[: args.limit]
    bundle = [dict(b) for b in bundle for _ in range(args.repeats)]
    total = len(bundle)
    run = Run(args)
    bundle = remaining(bundle, run.records)
    print(f"bundle: {len(bundle)} kernels, gpus {args.gpus}, {args.slots} slots each", flush=True)
    to_build = [b for b in bundle if b["kind"] == "load_inline"]
    for item in bundle:
        if item["kind"] != "load_inline":
            item["enqueued"] = time.monotonic()
            run.jobs.put(item)
    slots = [threading.Thread(target=run.slot, args=(g,), daemon=True) for g in args.gpus for _ in range(args.slots)]
    for t in slots:
        t.start()
    built: dict[Any, Any] = {}
    for item in to_build:  # a repeated kernel is built once
        built.setdefault(item["key"], []).append(item)
    with ThreadPoolExecutor(max_workers=max(1, args.compile_jobs)) as builders:
        list(builders.map(run.compile, built.values()))
    for _ in slots:
        run.jobs.put(None)
    for t in slots:
        t.join()
    sittings_file = args.state / f"{args.tag}_runs.json"
    sittings = json.loads(sittings_file.read_text()) if sittings_file.exists() else []
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - run.elapsed()))
    sittings.append({"started": started, "wall_s": round(run.elapsed(), 1), "kernels": len(bundle)})
    sittings_file.write_text(json.dumps(sittings, indent=1))
    summary = summarise(run.records, run.args, sum(s["wall_s"] for s in sittings), total)
    summary["sittings"] = sittings
    (args.state / f"{args.tag}_summary.json").write_text(json.dumps(summary, indent=1))
    if args.state != args.out:
        for name in (f"{args.tag}.jsonl", f"{args.tag}_summary.json", f"{args.tag}_runs.json"):
            shutil.copyfile(args.state / name, args.out / name)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
