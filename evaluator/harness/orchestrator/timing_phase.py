"""The timing phase of an evaluation (protocol.md section 4): paired ABAB blocks until the medians are precise enough,
timed outputs re-checked, a probe on never-seen inputs, and on request KernelBench's own loop for comparison.

Only the timed loops hold the GPU alone: each process pair's set-up (inputs made, warm-up, the L2 flush buffer,
peak memory, block sizing) runs under the shared hold before, the re-checks of its kept timed outputs under the shared
hold after (or in a pause of the loops when too many are pending), and a later pair starts holding nothing
(gpu_holds.py). The record's phases show each: timing_setup, timing_loop, timing_recheck (per later pair with a
`_pair_N` suffix), timing_checks (the fresh-input probe and the re-checks' verdict).

Functions of the evaluation's Context (context.py); the record's timing section itself is computed in
timing_record.py. stdlib only, like the orchestrator.
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from typing import Any

from evaluator.harness.orchestrator.bring_up import end_pair, fresh_pair
from evaluator.harness.orchestrator.context import Context
from evaluator.harness.orchestrator.gpu_holds import GpuHolds
from evaluator.harness.orchestrator.pair_policy import (
    PairSamples,
    host_fractions,
    pair_budget_s,
    pairs_disagree,
    pairs_wanted,
    wider_than_target,
)
from evaluator.harness.orchestrator.pending_rechecks import PendingRechecks
from evaluator.harness.orchestrator.timed_outputs import fresh_probe, recheck
from evaluator.harness.orchestrator.timing_record import (
    OuterBlocks,
    Samples,
    describe_pairs,
    describe_precision,
    fill_timing_record,
    stability_check,
)
from evaluator.harness.protocol import PAPER_LOOP_CALLS, Memory, Timing, part
from evaluator.harness.sandbox.candidate_cpu import busy_finding, used_between
from evaluator.harness.timing import (
    LONG_BLOCK_TARGETS,
    analytic_log_half_width,
    calls_per_block,
    enough_calls,
    rse_median,
)

MIN_ROUNDS = 4  # blocks per side before the loop may stop early (quick mode's 10 calls would be only 2)


def run_timing(ctx: Context, holds: GpuHolds) -> None:
    """Timing. `holds` (gpu_holds.GpuHolds) takes the GPU in a mode for a block: shared for set-up and re-checks,
    exclusive for timed loops only (on CUDA with both workers pinned to a CPU set aside for timed loops,
    cpu_pin.py); "none" around a later process pair's start, so no process starts while the GPU is held."""
    started = time.monotonic()
    opts = ctx.opts
    ctx.timing_sets = _timing_sets(ctx)
    seeds = [ctx.seed() for _ in range(ctx.timing_sets)]
    pairs: list[PairSamples] = []
    setup, block = _time_pair(ctx, seeds, pairs, None, pair_budget_s(opts, 0.0, 0, 1), holds)
    host = host_fractions(pairs[0])
    wanted = pairs_wanted(pairs[0], host, opts)
    skipped = ""
    starts: list[dict[str, Any]] = []
    while True:
        if len(pairs) >= wanted:
            unsure = pairs_disagree(pairs, opts.pair_agreement) or wider_than_target(pairs, opts)
            if not (1 < wanted < opts.max_process_pairs and unsure):
                break
            wanted += 1  # the pairs disagree, or too few to pin their spread down: one more independent pair
        if ctx.left() < 0.5 * ctx.spec.timeout:  # a pair costs start-up and import again: only with time to spare
            skipped = f"{wanted - len(pairs)} more process pairs skipped: under half the evaluation's time left"
            break
        step = time.monotonic()
        # Nothing of the GPU held while the old pair ends and the new one starts; once the old pair is gone (and
        # its device memory with it: cut before, another evaluation was admitted into memory the old workers still
        # held), the declaration cut to what a start holds, grown back after (gpu_memory_wait's, not the start's).
        with holds.hold("none") as held:
            end_pair(ctx)
            ended = round(time.monotonic() - step, 3)
            with holds.declaration_cut():
                fresh_pair(ctx)
                seconds = round(time.monotonic() - step, 3)
                ctx.phase(f"pair_{len(pairs) + 1}_start", step)
        starts.append(
            {
                "pair": len(pairs) + 1,
                "seconds": seconds,
                "ended_s": ended,
                "gpu_hold": held,
                "memory_wait_s": holds.last_growth_wait_s,
            }
        )
        if held == "exclusive":
            phases = ctx.record.phases
            phases["pair_starts_under_exclusive_lock"] = (phases.get("pair_starts_under_exclusive_lock") or 0) + 1
        spent = sum(p.loop_s for p in pairs)
        _time_pair(ctx, seeds, pairs, block, pair_budget_s(opts, spent, len(pairs), wanted), holds)
    step = time.monotonic()
    paper = None
    if opts.paper_loop:
        with holds.hold("exclusive"):
            paper = _paper_loop(ctx)
    rechecks: dict[str, Any] = {}
    for pair in pairs:
        rechecks.update(pair.rechecks)
    times, walls, outer, forged = _pooled(pairs)
    with holds.hold("shared"):  # never-seen inputs, paired with the baseline on each (timed_outputs.fresh_probe)
        fresh_rounds = fresh_probe(ctx, rechecks, _medians(times), alone=lambda: holds.hold("exclusive"))
    recheck(ctx, rechecks)
    ctx.phase("timing_checks", step)
    # The timing part is built as a dict (timing_record.py) and typed once complete, below.
    timing = ctx.record.timing.to_dict()
    fill_timing_record(
        ctx.record,
        timing,
        times,
        walls,
        outer,
        forged,
        setup,
        opts,
        cuda=ctx.cuda,
        input_sets=ctx.timing_sets,
        fresh_times=ctx.fresh_times,
        fresh_base_times=ctx.fresh_base_times,
        pairs=[(p.times["tf32"], p.times["cand"]) for p in pairs],
    )
    describe_pairs(timing, pairs, wanted=wanted, block_calls=block, skipped=skipped, opts=opts, host=host)
    timing["pair_starts"] = starts
    stability_check(ctx.record, timing, [(p.times["tf32"], p.times["cand"]) for p in pairs], opts)
    describe_precision(timing, [p.stopped for p in pairs], opts)
    _describe_cpu(ctx, timing, pairs)
    if timing.get("candidate_fresh_inputs") is not None:
        timing["candidate_fresh_inputs"]["rounds"] = fresh_rounds
    if paper is not None:
        timing["paper_loop"] = paper
    ctx.record.timing = part(Timing, timing)
    ctx.phase("timing", started)


def _describe_cpu(ctx: Context, timing: dict[str, Any], pairs: list[PairSamples]) -> None:
    """Where the workers were timed (timing.cpu: the first pair's CPU and why, every pair's pinned threads) and
    the kernel's CPU time while the baseline was timed (timing.candidate_cpu); a kernel busy then fails timer
    integrity (candidate_cpu.py)."""
    timing["cpu"] = {"pinned": pairs[0].cpu, "threads_pinned": [p.pinned for p in pairs], "why": pairs[0].cpu_why}
    base_cpu = sum(cpu_ms for p in pairs for cpu_ms, _ in p.busy.values())
    base_wall = sum(wall_ms for p in pairs for _, wall_ms in p.busy.values())
    timing["candidate_cpu"] = {
        "during_baseline_ms": round(base_cpu, 1),
        "baseline_wall_ms": round(base_wall, 1),
        "method": "CPU time of the kernel's processes (/proc) read just before and after each baseline block",
    }
    finding = busy_finding(base_cpu, base_wall)
    if finding:
        ctx.record.set_check("timer_integrity", False, finding)


def _time_pair(
    ctx: Context,
    seeds: list[int],
    pairs: list[PairSamples],
    block: int | None,
    budget_s: float,
    holds: GpuHolds,
) -> tuple[dict[str, Any], int]:
    """One process pair's timing (appended to `pairs`): set-up under the shared hold, the timed blocks under the
    exclusive hold, within `budget_s` (pair_budget_s), then its kept outputs re-checked under the shared hold. The
    first pair sizes the blocks (`block` None); later pairs use the same size. Returns the set-up reply and the block
    size."""
    opts = ctx.opts
    first = not pairs
    suffix = "" if first else f"_pair_{len(pairs) + 1}"
    step = time.monotonic()
    lead_us = opts.launch_lead_us
    with holds.hold("shared"):
        setup = ctx.ref.timing_setup(
            seeds=seeds, warmup=opts.warmup_calls, compile=opts.compile_baseline, lead_us=lead_us
        )
        ctx.cand.timing_setup(seeds=seeds, warmup=opts.warmup_calls, lead_us=lead_us)
        neighbours = holds.others()  # beside whom both sides' buffers were just placed (pair_policy.pairs_wanted)
        if first:
            mem_b = ctx.ref.memory()["peak"]
            mem_c = ctx.cand.memory()["peak"]
            ctx.record.memory = Memory(baseline_peak_bytes=mem_b, candidate_peak_bytes=mem_c)
            if mem_b is not None and mem_c:
                ctx.record.memory_ratio = mem_b / mem_c
        if block is None:
            block = _block_size(ctx)
    ctx.phase(f"timing_setup{suffix}", step)
    # The FP32 standard-protocol baseline is timed in the first pair only: its speedup is the headline speedup
    # times that pair's FP32 / TF32 ratio (timing_record.compute_speedups), which both sides of one process share.
    sides = ["tf32", "cand"] + (["fp32"] if first else [])
    sides += ["compile"] if opts.compile_baseline and not setup["compile_error"] else []
    tag = "" if first else f"pair {len(pairs) + 1} "
    pending = PendingRechecks(ctx, holds.hold)
    with holds.hold("exclusive"):  # with it, the timing CPU and both workers pinned to it (gpu_holds.py)
        samples = _timed_blocks(ctx, sides, len(seeds), block, budget_s, pending, tag)
        samples.pinned, samples.cpu, samples.cpu_why = holds.pinned, holds.cpu, holds.cpu_why
    samples.neighbours = neighbours
    ctx.record.phases[f"timing_loop{suffix}"] = round(samples.loop_s, 3)
    step = time.monotonic()
    with holds.hold("shared"):
        pending.flush()
    samples.rechecks = pending.results
    ctx.record.phases[f"timing_recheck{suffix}"] = round(time.monotonic() - step + pending.paused_s, 3)
    pairs.append(samples)
    return setup, block


def _medians(times: Samples) -> dict[str, float]:
    """Each side's median call over the pooled pairs (the fresh-input probe compares against them)."""
    return {side: statistics.median(got) for side, got in times.items() if got}


def _block_size(ctx: Context) -> int:
    """Calls per block: opts.block_calls, more for short calls so a block lasts opts.target_block_ms on the
    orchestrator's clock, fewer for long ones (timing.calls_per_block). Sized from untimed baseline calls (no
    kernel code runs): two, then a whole block unless those two were already long (a 100 ms call is not timed ten
    times just to learn that it is long)."""
    opts = ctx.opts
    per_call = 0.0
    for n in (2, opts.block_calls):
        t0 = time.perf_counter_ns()
        ctx.ref.time_block(mode="tf32", n=n, offset=0)
        per_call = (time.perf_counter_ns() - t0) / 1e6 / max(n, 1)
        if per_call * opts.block_calls >= LONG_BLOCK_TARGETS * opts.target_block_ms:
            break
    return calls_per_block(opts.block_calls, per_call, opts.target_block_ms, opts.max_block_calls)


def _pooled(pairs: list[PairSamples]) -> tuple[Samples, Samples, OuterBlocks, list[str]]:
    """Every pair's samples side by side (a side a later pair lacks, e.g. a compile baseline that failed to build
    there, keeps the pairs that have it)."""
    times: Samples = {s: [t for p in pairs for t in p.times.get(s, [])] for s in pairs[0].times}
    walls: Samples = {s: [t for p in pairs for t in p.walls.get(s, [])] for s in pairs[0].walls}
    outer: OuterBlocks = {s: [b for p in pairs for b in p.outer.get(s, [])] for s in pairs[0].outer}
    return times, walls, outer, [f for p in pairs for f in p.forged]


def _timed_blocks(
    ctx: Context,
    sides: list[str],
    input_sets: int,
    block: int,
    budget_s: float,
    pending: PendingRechecks,
    tag: str = "",
) -> PairSamples:
    """Blocks of `block` calls per side in ABAB order until both medians are precise enough (or a limit is
    reached). Collects per-side call times and synced walls, the orchestrator's view of each block and forged-clock
    findings; a kept block's outputs go to `pending` for their re-check (None for one that was not a plain tensor)."""
    opts = ctx.opts
    times: Samples = {s: [] for s in sides}
    walls: Samples = {s: [] for s in sides}
    outer: OuterBlocks = {s: [] for s in sides}  # (orchestrator wall, sum, n)
    host: Samples = {s: [] for s in sides}
    busy = {s: [0.0, 0.0] for s in sides if s != "cand"}  # the kernel's CPU ms and the wall ms, baseline blocks
    watch = ctx.workers.candidate_cpu()
    forged: list[str] = []
    offset, rounds, budget_end = 0, 0, time.monotonic() + budget_s
    stopped = ""
    kept_blocks = 0
    max_calls = max(opts.max_calls, MIN_ROUNDS * block)  # longer blocks: still MIN_ROUNDS of them
    began = time.monotonic()
    prefix = tag.replace(" ", "_")
    while True:
        order = sides if rounds % 2 == 0 else list(reversed(sides))  # ABAB: drift cancels
        keep = secrets.randbelow(4) == 0 or (kept_blocks == 0 and rounds >= 1)
        for side in order:
            snap = watch.snapshot() if side != "cand" else {}
            t0 = time.perf_counter_ns()
            if side == "cand":
                reply = ctx.cand.time_block(n=block, offset=offset)
            else:
                reply = ctx.ref.time_block(mode=side, n=block, offset=offset)
            wall_ms = (time.perf_counter_ns() - t0) / 1e6
            if side != "cand":  # read just before and after the block, outside its timed wall
                busy[side][0] += used_between(snap, watch.snapshot())
                busy[side][1] += wall_ms
            got = [float(x) for x in reply["times"]]
            times[side] += got
            walls[side] += [float(x) for x in reply["walls"]]
            host[side] += _host_times(reply)
            outer[side].append((wall_ms, sum(got), len(got)))
            if side == "cand":
                if sum(got) > wall_ms * 1.02 + 0.5:  # more time reported than elapsed: a forged clock
                    forged.append(f"{tag}block {rounds}: {sum(got):.3f} ms reported in {wall_ms:.3f} ms")
                if keep:  # decided before, revealed only after the block (A7 phase detection)
                    kept_blocks += 1
                    paths = {str(i): str(ctx.folders.io / f"timed_{prefix}{rounds}_{i}.pt") for i in range(input_sets)}
                    pending.add(f"{tag}block {rounds}", ctx.cand.save_kept(paths)["saved"], paths)
        offset += block
        rounds += 1
        n = len(times["cand"])
        if n >= max_calls:
            stopped = f"max_calls ({n} calls)"
            break
        enough = all(enough_calls(times[s], opts.min_calls, opts.min_timed_ms) for s in ("cand", "tf32"))
        if enough and kept_blocks and rounds >= MIN_ROUNDS:
            # the medians' precision decides (the speedup is their ratio); the mean's RSE is still reported.
            # MIN_ROUNDS: the wall-clock cross-check compares per-block medians, which two blocks cannot give.
            if rse_median(times["cand"]) < opts.rse_target and rse_median(times["tf32"]) < opts.rse_target:
                stopped = f"rse_target ({n} calls)"
                break
            # precise enough for the speedup itself: its interval's half-width from this pair's calls is within
            # ci_target (one side may be noisier than rse_target if the other is well below it)
            half = analytic_log_half_width(times["tf32"], times["cand"])
            if opts.ci_target > 0 and math.expm1(half) <= opts.ci_target:
                stopped = f"ci_target ({n} calls, half-width {math.expm1(half):.2%})"
                break
            if time.monotonic() - pending.paused_s > budget_end:
                stopped = f"timing_budget_s ({n} calls)"
                break
        if ctx.left() < 0.1 * ctx.spec.timeout:
            stopped = f"deadline ({n} calls)"
            break
    loop_s = max(time.monotonic() - began - pending.paused_s, 0.0)
    return PairSamples(times, walls, outer, forged, {}, host, busy, stopped=stopped, loop_s=loop_s)


def _host_times(reply: dict[str, Any]) -> list[float]:
    """A block's per-call host times; none when absent (CPU) or malformed (the candidate's reply is its own)."""
    got = reply.get("host")
    if not isinstance(got, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in got):
        return []
    return [float(x) for x in got]


def _paper_loop(ctx: Context) -> dict[str, Any]:
    """For comparison only, never a verdict: KernelBench's own loop (a fixed number of back-to-back calls on one
    input set, no L2 flush, CUDA events), on both sides under the same TF32 flags, in the same period."""
    base = [float(x) for x in ctx.ref.time_block(mode="tf32", n=PAPER_LOOP_CALLS, offset=0, paper=True)["times"]]
    cand = [float(x) for x in ctx.cand.time_block(n=PAPER_LOOP_CALLS, offset=0, paper=True)["times"]]
    b_med, c_med = statistics.median(base), statistics.median(cand)
    return {
        "method": f"{PAPER_LOOP_CALLS} calls on one input set, no L2 flush (KernelBench's loop); not a verdict",
        "calls": PAPER_LOOP_CALLS,
        "baseline_tf32_ms": b_med,
        "candidate_ms": c_med,
        "speedup": b_med / c_med if c_med > 0 else None,
    }


def _timing_sets(ctx: Context) -> int:
    """Rotating input sets for timing; fewer when each is gigabytes. Each worker holds every set and one output
    per set, plus a fresh set and its output, within its share of device memory (a 6-8 GB-per-tensor problem
    gets 1-2 sets instead of 3; the fresh-input probe still sees never-seen inputs)."""
    total = ctx.info.get("total_memory_bytes")
    if not (ctx.cuda and total and ctx.input_bytes):
        return ctx.opts.input_sets
    per_set = ctx.input_bytes + ctx.output_bytes
    # the reference also holds a fresh set, its output and a forward's clone and output; the candidate alike
    room = total * ctx.opts.gpu_memory_fraction - (2 * ctx.input_bytes + 3 * ctx.output_bytes)
    return max(1, min(ctx.opts.input_sets, int(room // max(per_set, 1))))
