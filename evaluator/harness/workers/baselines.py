"""Baseline sweep: time the reference Model of many problems under TF32 and FP32 (and optionally torch.compile),
with peak memory, in one clean process that never imports candidate code.

    python3 -m evaluator.harness.workers.baselines PROBLEMS.jsonl --device cuda --out baselines.jsonl [--levels 1 2 3]

Writes one JSON line per problem as soon as it is measured (a crash or a time limit loses nothing already written)
and a final summary line. `--shards N` runs N sweep processes on the one GPU: warm-up calls (torch.compile's
compilation, CPU-bound, minutes for some problems) overlap, and each problem's timed calls take the GPU alone through
the evaluator's GPU lock. The same timing loop as an evaluation: L2 flush before every timed call, warm-up calls not
timed, rotation through fresh input sets generated on the device, at least `--min-calls` calls or until the
relative standard error of the median is below `--rse` within `--budget` seconds per precision. Stdlib + torch
only.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from evaluator.harness.gpu_lock import DeviceLock
from evaluator.harness.protocol import HARNESS_VERSION, Options
from evaluator.harness.timing import rse_median, summarise, time_calls
from evaluator.harness.workers.command_loop import short_exception
from evaluator.harness.workers.device import device_info, now_ns, set_precision, sync
from evaluator.harness.workers.l2 import L2Flusher, no_flush
from evaluator.harness.workers.lead import LaunchLead
from evaluator.harness.workers.memory import peak_bytes


def _inputs(ns: dict[str, Any], device: str, seed: int) -> list[Any]:
    with torch.device(device):
        torch.manual_seed(seed)
        return [v.to(device) if isinstance(v, torch.Tensor) else v for v in ns["get_inputs"]()]


def _time_adaptive(
    fn: Any,
    sets: list[list[Any]],
    *,
    device: str,
    flush: L2Flusher,
    lead: LaunchLead,
    min_calls: int,
    max_rse: float,
    budget_s: float,
) -> list[float]:
    """Blocks of 10 calls until min_calls, or earlier once >= 20 calls reach max_rse, or the time budget is spent."""
    cuda = device.startswith("cuda")
    times: list[float] = []
    deadline = time.monotonic() + budget_s
    while len(times) < min_calls:
        block, _ = time_calls(
            fn,
            sets,
            10,
            len(times),
            cuda=cuda,
            flush=flush,
            clock_ns=now_ns,
            event_cls=torch.cuda.Event if cuda else None,
            synchronize=torch.cuda.synchronize if cuda else None,
            lead=lead,
        )
        times.extend(block)
        if len(times) >= 20 and (rse_median(times) < max_rse or time.monotonic() > deadline):
            break
    return times


def measure_problem(
    source: str, *, device: str, args: argparse.Namespace, gpu: contextlib.AbstractContextManager[Any] | None = None
) -> dict[str, Any]:
    """TF32, FP32 (and compile) baseline of one problem source. Warm-ups (compilation) run first, then the timed
    calls inside `gpu` (the exclusive GPU lock when several sweeps share the device)."""
    ns: dict[str, Any] = {"__name__": "kernelbench_problem"}
    exec(compile(source, "problem.py", "exec"), ns)  # problem files are trusted
    torch.manual_seed(42)
    model = ns["Model"](*ns["get_init_inputs"]()).to(device)
    sets = [_inputs(ns, device, 1000 + i) for i in range(args.input_sets)]
    flush = L2Flusher(device)
    lead = LaunchLead(device, args.lead_us)
    result: dict[str, Any] = {"precisions": {}, "launch_lead": lead.detail}
    variants: list[tuple[str, bool, Any]] = [("tf32", True, model), ("fp32", False, model)]
    if args.compile:
        variants.append(("compile", True, None))
    warm: list[tuple[str, bool, Any]] = []
    with torch.no_grad():
        for name, tf32, fn in variants:
            set_precision(tf32)
            try:
                if fn is None:
                    torch._dynamo.reset()
                    fn = torch.compile(model)
                started = time.monotonic()
                for i in range(args.warmup):
                    fn(*sets[i % len(sets)])
                sync(device)
                warm.append((name, tf32, fn))
                if name == "compile":
                    result["compile_seconds"] = round(time.monotonic() - started, 2)
            except Exception as exc:  # one failed variant (e.g. compile) does not lose the others
                result["precisions"][name] = {"error": short_exception(exc, 400)}
    with torch.no_grad(), gpu or contextlib.nullcontext():
        for name, tf32, fn in warm:
            set_precision(tf32)
            try:
                times = _time_adaptive(
                    fn,
                    sets,
                    device=device,
                    flush=flush,
                    lead=lead,
                    min_calls=args.min_calls,
                    max_rse=args.rse,
                    budget_s=args.budget,
                )
                stats = summarise(times)
                stats["peak_memory_bytes"] = peak_bytes(fn, sets[0], device)
                stats["flags"] = {"tf32": tf32}
                result["precisions"][name] = stats
            except Exception as exc:  # one failed variant (e.g. compile) does not lose the others
                result["precisions"][name] = {"error": short_exception(exc, 400)}
        if args.paper_loop:
            # KernelBench's own loop, for comparison: FP32, one fixed input set, 100 timed calls, no L2 flush.
            set_precision(False)
            times, _ = time_calls(
                model,
                sets[:1],
                100,
                0,
                cuda=device.startswith("cuda"),
                flush=no_flush,
                clock_ns=now_ns,
                event_cls=torch.cuda.Event if device.startswith("cuda") else None,
                synchronize=torch.cuda.synchronize if device.startswith("cuda") else None,
            )
            result["paper_loop_fp32"] = summarise(times)
    set_precision(False)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", type=Path, help="JSONL in the format of the shipped problems.jsonl")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--levels", type=int, nargs="*", default=[1, 2, 3])
    parser.add_argument("--ids", default="", help="only these L/P keys, comma separated (e.g. 1/1,2/17)")
    parser.add_argument("--min-calls", type=int, default=100)
    parser.add_argument("--rse", type=float, default=0.005)
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per precision before stopping early")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--input-sets", type=int, default=2)
    parser.add_argument("--lead-us", type=float, default=Options.launch_lead_us, help="launch lead (0: none)")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile (slow: minutes)")
    parser.add_argument("--paper-loop", action="store_true", help="also time a fixed 100-call no-flush FP32 loop")
    parser.add_argument("--deadline", type=float, default=0, help="stop starting new problems after N seconds")
    parser.add_argument("--shards", type=int, default=1, help="sweep processes sharing the GPU (timing takes turns)")
    parser.add_argument("--shard", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--lock-dir", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.shards > 1 and args.shard < 0:
        return _run_shards(args, list(sys.argv[1:] if argv is None else argv))

    wanted = {tuple(int(x) for x in key.split("/")) for key in args.ids.split(",") if key}
    rows = [json.loads(line) for line in args.problems.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["level"] in args.levels and (not wanted or (r["level"], r["problem_id"]) in wanted)]
    if args.shard >= 0:
        rows = rows[args.shard :: args.shards]
    lock = DeviceLock(args.lock_dir, "baseline-sweep") if args.lock_dir else None
    if args.device.startswith("cuda"):
        torch.cuda.set_device(0)
    env = {
        "device": device_info(args.device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "harness_version": HARNESS_VERSION,
        "python": sys.version.split()[0],
    }
    start = time.monotonic()
    done = failed = 0
    with args.out.open("w") as out:
        for row in rows:
            if args.deadline and time.monotonic() - start > args.deadline:
                break
            t0 = time.monotonic()
            record: dict[str, Any] = {k: row[k] for k in ("level", "problem_id", "name", "sha256")}
            try:
                gpu = lock.exclusive(time.monotonic() + 3600) if lock else None
                record.update(measure_problem(row["source"], device=args.device, args=args, gpu=gpu))
                if all("error" in stats for stats in record["precisions"].values()):
                    failed += 1
                else:
                    done += 1
            except Exception as exc:  # reported per problem; the sweep goes on
                record["error"] = short_exception(exc, 400)
                failed += 1
            record["seconds"] = round(time.monotonic() - t0, 3)
            out.write(json.dumps(record) + "\n")
            out.flush()
            gc.collect()
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
            print(f"L{row['level']}/{row['problem_id']}: {record['seconds']} s", flush=True)
        summary = {
            "summary": True,
            "measured": done,
            "failed": failed,
            "skipped": len(rows) - done - failed,
            "total_seconds": round(time.monotonic() - start, 1),
            "environment": env,
        }
        out.write(json.dumps(summary) + "\n")
    print(json.dumps(summary))
    return 0


def _run_shards(args: argparse.Namespace, argv: list[str]) -> int:
    """Run `--shards` sweeps of this module side by side and merge their lines into `--out` (sorted by problem),
    with one summary whose total_seconds is the wall time of the whole sweep."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        parts = [Path(tmp) / f"part{i}.jsonl" for i in range(args.shards)]
        children = [
            subprocess.Popen(  # this module, with the caller's own arguments
                [sys.executable, "-m", "evaluator.harness.workers.baselines", *argv]
                + ["--shard", str(i), "--out", str(part), "--lock-dir", str(Path(tmp) / "locks")]
            )
            for i, part in enumerate(parts)
        ]
        codes = [child.wait() for child in children]
        lines = [json.loads(line) for part in parts if part.exists() for line in part.read_text().splitlines()]
    rows = sorted((r for r in lines if not r.get("summary")), key=lambda r: (r["level"], r["problem_id"]))
    summaries = [r for r in lines if r.get("summary")]
    summary = {
        "summary": True,
        **{key: sum(s[key] for s in summaries) for key in ("measured", "failed", "skipped")},
        "total_seconds": round(time.monotonic() - start, 1),
        "shards": args.shards,
        "shard_exit_codes": codes,
        "environment": summaries[0]["environment"] if summaries else None,
    }
    with args.out.open("w") as out:
        for row in rows + [summary]:
            out.write(json.dumps(row) + "\n")
    print(json.dumps(summary))
    return 0 if not any(codes) else 1


if __name__ == "__main__":
    sys.exit(main())
