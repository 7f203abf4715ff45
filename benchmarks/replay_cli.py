"""replay_bundle.py's command line, its calibration and its what-ifs. Standard library only.

Calibration (--calibrate) fits the simulation's free parameters to the rows: the host parallelism so that every
worker start-up (the same work each time: two processes, torch, a CUDA context) comes out the same once its
neighbours' share is divided out; then the drain (a timer waiting for shared commands in flight) so that the
calibration run's replay queues as long for the lock in all as the run did. The shared-GPU parallelism is shown, not
fitted: the same phase of the same problem in different runs comes out about as spread whatever it is (the rows
cannot tell a slow host part from a stretched GPU part), so it stays 1, the GPU's own: without MPS the contexts of
different processes take turns on it.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import replay_jobs as rb
from benchmarks.replay_model import CPU_PARALLELISM, DRAIN_S, SHARED_PARALLELISM, SHARED_ROLES, Policy
from benchmarks.replay_problems import baseline_ms, declared_bytes
from benchmarks.replay_work import Piece, deflate, median, read_rows, row_pieces

POLICY_RUNS = ["bundle-3", "sample-1", "sample-2", "real8-1", "real8-2", "repeats-1", "repeats-2"]
P_GRID = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, math.inf]
C_GRID = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 24.0, math.inf]
DRAIN_GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0]
GPU_BOUND = 0.25  # shared phases whose calls are at least this share of their measured time calibrate P


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=Path, nargs="*", help="runs whose rows give the work (default: bundle-3)")
    parser.add_argument("--check", type=Path, help="replay this run's items and compare with its rows")
    parser.add_argument("--calibrate", action="store_true", help="fit the parallelisms and the drain to the rows")
    parser.add_argument("--what-if", action="store_true", help="the full bundle under policy variants (Markdown)")
    parser.add_argument("--only", nargs="*", default=[], help="these problems only, e.g. L2/1")
    parser.add_argument("--limit", type=int, default=0, help="first N problems of the (sorted) bundle only")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--slots", type=int, default=8, help="concurrent evaluations per GPU")
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--no-prestart", action="store_true", help="no standby harnesses")
    parser.add_argument("--exclusive", choices=["loops", "timing"], default="loops", help="what holds the GPU alone")
    parser.add_argument("--alone-above-mb", type=float, default=0.0, help="the old rule: bigger problems run alone")
    parser.add_argument("--no-ledger", action="store_true", help="no memory admission (before 2026-12-04)")
    parser.add_argument("--shared-holds", choices=["command", "phase"], default="command", help="phase: before 12-04")
    parser.add_argument("--capacity-gib", type=float, default=0.9 * rb.H200_GIB, help="memory evaluations may declare")
    parser.add_argument("--declare", choices=["peak", "io"], default="peak", help="today's declaration or bundle-3's")
    parser.add_argument("--shared-parallelism", type=float, default=SHARED_PARALLELISM)
    parser.add_argument("--cpu-parallelism", type=float, default=CPU_PARALLELISM)
    parser.add_argument("--drain", type=float, default=DRAIN_S, help="seconds a granted timer waits for commands")
    parser.add_argument("--deadline", type=float, default=math.inf, help="start no evaluation after this")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--compile-jobs", type=int, default=4)
    parser.add_argument("--multi-pair-loop-scale", type=float, default=1.0, help="the timing budget, as a scale")
    parser.add_argument("--correctness-scale", type=float, default=1.0)
    parser.add_argument(
        "--placement-pairs", type=int, default=1, help="pairs of a one-pair problem beside others (1: the rows')"
    )
    parser.add_argument(
        "--placement-beside-gib", type=float, default=0.0, help="later pairs only beside this much declared (0: any)"
    )
    parser.add_argument(
        "--memory-patience", type=float, default=math.inf, help="seconds a declaration waits before later ones stop"
    )
    parser.add_argument(
        "--pair-start-memory",
        choices=["held", "cut"],
        default="held",
        help="a later pair's start with the declaration held whole (the rows') or cut to what it holds, grown back",
    )
    parser.add_argument(
        "--first-memory",
        choices=["after_build", "start", "before_build"],
        default="after_build",
        help="the first admission: the declaration once the reference is built (the rows'), a start's grown after "
        "the build, or the declaration before the build (today's)",
    )
    parser.add_argument("--first", type=int, nargs="*", default=[46, 100, 200, 250], help="when the first N ended")
    parser.add_argument("--markdown", action="store_true", help="with --check: one Markdown row (replay.md)")


def _log_spread(groups: dict[Any, list[float]]) -> tuple[float, int]:
    """The pooled within-group standard deviation of log work, and how many values entered it."""
    squares, count, dof = 0.0, 0, 0
    for values in groups.values():
        logs = [math.log(v) for v in values if v > 0.05]
        if len(logs) < 2:
            continue
        mean = sum(logs) / len(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        count += len(logs)
        dof += len(logs) - 1
    return (math.sqrt(squares / dof) if dof else math.nan), count


def _deflated(paths: list[Path], policy: Policy, table: dict[str, Any]) -> tuple[list[float], dict[Any, list[float]]]:
    """Every start-up's work, and the shared phases' work by (problem, phase), under `policy`'s parallelisms."""
    spawns: list[float] = []
    shared: dict[Any, list[float]] = {}
    for path in paths:
        rows = read_rows(path)
        evals = [r for r in rows if r.get("phase") == "evaluate" and r.get("phases")]
        call_ms = baseline_ms()
        works = [row_pieces(r, rb.is_current(rows), call_ms.get(r["key"], 0.0)) for r in evals]
        counts = {r["key"]: table.get(r["key"]) for r in evals}
        footprints = {k: (c["input_bytes"] + c["output_bytes"]) if c else None for k, c in counts.items()}
        deflate(works, [r for r in rows if r.get("phase") == "compile"], rb.row_policy(rows, policy), footprints)
        for work in works:
            if work.row.get("status") != "ok":
                continue
            spawns += [x.work for x in work.pieces if x.role == "spawn"]
            spawns += [work.standby.work] if work.standby is not None else []
            first: dict[str, Piece] = {}
            for x in work.pieces:  # the first pair's set-up only: later pairs' differ by design
                first.setdefault(x.role, x)
            for role in SHARED_ROLES:  # where the GPU is a good part of the phase: elsewhere the spread is not its
                piece = first.get(role)
                if piece is not None and piece.gpu_s >= GPU_BOUND * (piece.seconds - piece.wait) > 0:
                    shared.setdefault((work.row["key"], role), []).append(piece.work)
    return spawns, shared


def calibrate(args: argparse.Namespace, policy: Policy, table: dict[str, Any]) -> int:
    paths = args.rows or [rb.RESULTS / "policy-h200" / f"{name}.jsonl" for name in POLICY_RUNS]
    print("Host parallelism C: spread of every worker start-up's work (log scale), smaller is better")
    best_c = (math.inf, CPU_PARALLELISM)
    for c in C_GRID:
        spawns, _ = _deflated(paths, replace(policy, cpu_parallelism=c), table)
        spread, n = _log_spread({"spawn": spawns})
        best_c = min(best_c, (spread, c))
        print(f"  C={c:>5}: sd(log) {spread:.3f} over {n} start-ups, median {median(spawns):.1f} s")
    print("Shared-GPU parallelism P (shown, not fitted): spread of one problem's GPU-heavy shared phase across runs")
    for p in P_GRID:
        _, shared = _deflated(paths, replace(policy, shared_parallelism=p, cpu_parallelism=best_c[1]), table)
        spread, n = _log_spread(shared)
        groups = sum(len(v) > 1 for v in shared.values())
        print(f"  P={p:>5}: pooled sd(log) {spread:.3f} over {n} phases in {groups} groups")
    fitted = replace(policy, cpu_parallelism=best_c[1], deadline=500.0, slots=8)
    source = rb.Source([rb.CALIBRATION_RUN], fitted, table, "io")
    rows = read_rows(rb.CALIBRATION_RUN)
    jobs, _ = rb.make_jobs(rb.run_items(rows), source)
    want = rb.measured(rows)["sum_lock_wait_s"]
    print(f"Drain: the replay of bundle-3 (8 slots, deadline 500) queues for the lock {want} s in all, as measured")
    best_d = (math.inf, 0.0)
    for drain in DRAIN_GRID:
        got = rb.predict(jobs, replace(fitted, drain_s=drain), source, [])
        best_d = min(best_d, (abs(got["sum_lock_wait_s"] - want), drain))
        waited, wall, evaluated = got["sum_lock_wait_s"], got["wall_s"], got["evaluated"]
        print(f"  drain {drain:4} s: lock wait {waited} s, wall {wall} s, evaluated {evaluated}")
    print(f"fitted: host parallelism {best_c[1]}, drain {best_d[1]} s (shared parallelism {policy.shared_parallelism})")
    return 0


def what_if(args: argparse.Namespace, policy: Policy, source: rb.Source) -> int:
    """The full bundle under variants of `policy` (Markdown rows, for replay.md)."""
    items = rb.bundle_items(args.only, args.limit, args.repeats)
    jobs, from_rows = rb.make_jobs(items, source)
    old = replace(policy, exclusive="timing", alone_above_mb=1024.0, capacity=None, shared_holds="phase")
    today = replace(
        policy, placement_pairs=2, memory_patience_s=60.0, pair_start_memory="cut", first_memory="before_build"
    )
    variants: list[tuple[str, Policy, list[Any]]] = [
        (f"as given ({policy.slots} slots, prestart {policy.prestart})", policy, jobs),
        *((f"{n} slots", replace(policy, slots=n), jobs) for n in (4, 6, 12, 16) if n != policy.slots),
        ("no standby harnesses (prestart off)", replace(policy, prestart=not policy.prestart), jobs),
        ("correctness 2x faster", replace(policy, correctness_scale=0.5), jobs),
        ("several-pair timed loops 2x shorter (timing budget)", replace(policy, multi_pair_loop_scale=0.5), jobs),
        (
            "placement pairs: a second pair for a one-pair problem placed beside others",
            replace(policy, placement_pairs=2),
            jobs,
        ),
        ("memory patience 30 s", replace(policy, memory_patience_s=30.0), jobs),
        ("memory patience 60 s (the harness's default since 12-06)", replace(policy, memory_patience_s=60.0), jobs),
        (
            "placement pairs and memory patience 60 s (the defaults of 12-06 morning)",
            replace(policy, placement_pairs=2, memory_patience_s=60.0),
            jobs,
        ),
        (
            "the declaration cut for later pairs' starts too (12-06 midday)",
            replace(policy, placement_pairs=2, memory_patience_s=60.0, pair_start_memory="cut"),
            jobs,
        ),
        (
            "those, and a start admitted before the workers touch the device, grown after the build (12-06 afternoon)",
            replace(today, first_memory="start"),
            jobs,
        ),
        ("today's defaults: those, the whole declaration admitted before the workers touch the device", today, jobs),
        ("today's defaults on 2 GPUs", replace(today, gpus=2), jobs),
        *(
            (
                f"today's defaults, a second pair only beside {gib} GiB declared",
                replace(today, placement_beside_gib=gib),
                jobs,
            )
            for gib in (16.0, 32.0, 64.0)
        ),
        ("the old rule: > 1 GB alone, the timing phase exclusive, phase-long shared holds, no ledger", old, jobs),
        (
            f"shared commands drained in a third of the time ({policy.drain_s / 3:.1f} s)",
            replace(policy, drain_s=policy.drain_s / 3),
            jobs,
        ),
        ("2 GPUs", replace(policy, gpus=2), jobs),
    ]
    if args.declare == "peak":
        io = [replace(j, declared=declared_bytes(source.counts(j.key), source.capacity, "io")) for j in jobs]
        variants.append(("bundle-3's declaration (before flops.PeakBytes)", policy, io))
    print(f"{len(jobs)} evaluations, {from_rows} from rows; the rest from class medians")
    columns = ["wall_s", "exclusive_timing_share", "gpu_busy_fraction", "gpu_exclusive_fraction", "gpu_drain_fraction"]
    columns += ["sum_memory_wait_s", "timeouts"]
    heads = ["policy", "wall (s)", "first 46 ended (s)", "exclusive share", "GPU busy", "held alone", "drain"]
    print("| " + " | ".join(heads + ["memory wait (s)", "timeouts"]) + " |")
    print("|---|" + "---|" * (len(columns) + 1))
    for name, variant, variant_jobs in variants:
        got = rb.predict(variant_jobs, variant, source, [46])
        cells = [str(got[c]) for c in columns]
        print(f"| {name} | {cells[0]} | {got['first_n_ended_s'].get(46)} | " + " | ".join(cells[1:]) + " |")
    return 0
