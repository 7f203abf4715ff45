"""The timing part of the result record (docs/protocol.md section 8): per-side summaries, the speedups and their
bootstrap interval, and the checks that decide whether the timed figures can be trusted (fresh-input replay,
wall-clock cross-check, forged clock, plausibility).

Pure computation on what the timing loop (timing_phase.py) collected, kept apart so each rule reads on its own.
The record's own figures (the speedups, the checks) are set on the typed `Record`; the timing part is filled as the
dict `timing` (nested pair rows, sides and cross-checks, many of them null), which timing_phase.py turns into the
typed `Timing` once it is complete (protocol.part: parsed closed, so a key record_timing.py does not name is a bug).
stdlib only, like the orchestrator: this runs in the process whose clock and checks the candidate cannot reach.
"""

from __future__ import annotations

import math
import secrets
import statistics
from typing import Any

from evaluator.harness.pair_interval import interval_unstable, log_ratio_interval, pair_log_ratios
from evaluator.harness.protocol import EXCESSIVE_SPEEDUP, Options, Record
from evaluator.harness.timing import Pair, pooled_ratio, summarise

Samples = dict[str, list[float]]  # side ("cand", "tf32", "fp32", "compile") -> per-call ms
OuterBlocks = dict[str, list[tuple[float, float, int]]]  # side -> per block (orchestrator wall ms, reported ms, calls)


def fill_timing_record(
    record: Record,
    timing: dict[str, Any],
    times: Samples,
    walls: Samples,
    outer: OuterBlocks,
    forged: list[str],
    setup: dict[str, Any],
    opts: Options,
    *,
    cuda: bool,
    input_sets: int,
    fresh_times: list[float],
    fresh_base_times: list[float],
    pairs: list[Pair] | None = None,
) -> None:
    """Fill `timing` (the record's timing part) and `record`'s speedups and timing checks in place.

    The order matters: the fresh-input correction and the wall-clock fallback each scale the speedups the step
    before produced, and the plausibility check judges the figure left after both. `pairs`: each process pair's
    (tf32 baseline, candidate) call times, when timing ran in more than one (the interval then covers their spread).
    """
    describe_method(timing, setup, opts, cuda=cuda, input_sets=input_sets)
    summarise_sides(timing, times, setup, opts)
    c_med = timing["candidate"]["median_ms"]
    if c_med and c_med > 0:  # no speedup from an empty or zero candidate median
        compute_speedups(record, timing, times, c_med, opts, pairs=pairs)
        if fresh_times:
            fresh_input_check(record, timing, c_med, fresh_times, fresh_base_times)
    wallclock_crosscheck(record, timing, walls, outer, c_med, opts)
    if forged:
        forged_clock_check(record, forged)
    speedup_plausible_check(record)


def describe_method(
    timing: dict[str, Any], setup: dict[str, Any], opts: Options, *, cuda: bool, input_sets: int
) -> None:
    """How the numbers were taken, so a reader can judge them without the harness source."""
    timing["method"] = "cuda_event" if cuda else "cpu_perf_counter"
    timing["device_kind"] = "cuda" if cuda else "cpu"
    timing["l2_flush"] = setup["flush"]
    timing["launch_lead"] = setup.get("lead")
    timing["order"] = "alternating blocks (ABAB)"
    timing["input_sets"] = input_sets
    timing["flags"] = {  # per side; `timing.precision` is the interval's precision (describe_precision)
        "candidate": "tf32 flags on",
        "baseline_tf32": "tf32 flags on",
        "baseline_fp32": "tf32 flags off; timed in the first process pair (speedup_fp32: speedup x its FP32/TF32)",
        "reference_for_correctness": "tf32 flags off",
    }


def summarise_sides(timing: dict[str, Any], times: Samples, setup: dict[str, Any], opts: Options) -> None:
    """Per-side statistics. A torch.compile baseline that failed to build is recorded as its error, not left out,
    so a missing compile speedup is explained."""
    timing["candidate"] = summarise(times["cand"])
    timing["baseline_tf32"] = summarise(times["tf32"])
    timing["baseline_fp32"] = summarise(times["fp32"])
    if "compile" in times:
        timing["baseline_compile"] = summarise(times["compile"])
    elif opts.compile_baseline:
        timing["baseline_compile"] = {"error": setup.get("compile_error")}


def compute_speedups(
    record: Record,
    timing: dict[str, Any],
    times: Samples,
    c_med: float,
    opts: Options,
    pairs: list[Pair] | None = None,
) -> None:
    """The headline speedup (TF32 baseline) and its interval on the log scale from the process pairs' medians
    (pair_interval.log_ratio_interval): exp(median of the pairs' log speedups), a deviant pair set aside from three
    pairs on, and an interval [x / f, x * f] that never reaches 0. With one pair that is the ratio of its
    medians and a bootstrap over its calls. The FP32 speedup scales it by the first pair's FP32 / TF32 ratio
    (fp32_speedup); a compile baseline's is a ratio of medians pooled over the pairs. The bootstrap seed is
    secret so the interval cannot be anticipated; quick runs resample less."""
    resamples = 500 if opts.quick else 2000
    record.speedup = timing["baseline_tf32"]["median_ms"] / c_med
    record.speedup_ci = None
    made = log_ratio_interval(pairs or [(times["tf32"], times["cand"])], resamples=resamples, seed=secrets.randbits(32))
    if made is not None:
        record.speedup, record.speedup_ci, timing["ci_method"] = made.speedup, [made.low, made.high], made.method
        timing["ci_half_width"] = math.expm1(made.half)  # the interval is [speedup / (1 + this), speedup * (1 + this)]
    record.speedup_fp32 = fp32_speedup(record.speedup, times, pairs)
    if "compile" in times:
        record.speedup_compile = timing["baseline_compile"]["median_ms"] / c_med


def fp32_speedup(speedup: float, times: Samples, pairs: list[Pair] | None) -> float | None:
    """The standard protocol's speedup: the headline (TF32) speedup times the FP32 / TF32 ratio of the baseline
    calls of the process that timed the FP32 side (the first pair; later pairs time TF32 and the kernel only). With
    one pair this is the FP32 median over the kernel's. A ratio of two sides of one process: host speed and clocks
    that differ between processes cancel in it."""
    fp32 = times.get("fp32") or []
    tf32 = (pairs[0][0] if pairs else None) or times.get("tf32") or []
    if not fp32 or not tf32 or statistics.median(tf32) <= 0:
        return None
    return speedup * statistics.median(fp32) / statistics.median(tf32)


def scale_speedups(record: Record, factor: float) -> None:
    """Scale every speedup figure and the interval by one factor, so they stay consistent with each other."""
    if record.speedup is not None:
        record.speedup *= factor
    if record.speedup_fp32 is not None:
        record.speedup_fp32 *= factor
    if record.speedup_compile is not None:
        record.speedup_compile *= factor
    if record.speedup_ci:
        record.speedup_ci = [None if v is None else v * factor for v in record.speedup_ci]


def looks_like_replay(
    c_med: float, fresh: list[float], b_med: float | None = None, base_fresh: list[float] | None = None
) -> bool:
    """Fresh calls much slower than the rotating ones; the 0.05 ms floor keeps jitter on tiny kernels from reading as
    replay. With the baseline's rotating median and its calls on the same never-seen sets, the candidate is allowed
    the slow-down those sets (and whatever else ran on the device meanwhile: the probe does not hold it alone) cost
    the baseline: a cache is slow on new sets for the candidate only."""
    allowance = 1.0
    if b_med and b_med > 0 and base_fresh:
        allowance = max(1.0, statistics.median(base_fresh) / b_med)
    return statistics.median(fresh) > 1.5 * c_med * allowance + 0.05


def fresh_input_check(
    record: Record, timing: dict[str, Any], c_med: float, fresh: list[float], base: list[float]
) -> None:
    """Compare the rotating-set median with calls on never-seen inputs. The timed loop rotates through a handful
    of sets, so a cache keyed on input contents or addresses (A6, A9) replays most timed calls; if fresh calls
    are much slower, the kernel is judged by what fresh inputs cost."""
    f_med = statistics.median(fresh)
    b_med = timing["baseline_tf32"]["median_ms"]
    replay = looks_like_replay(c_med, fresh, b_med, base)
    timing["candidate_fresh_inputs"] = {"median_ms": f_med, "calls": len(fresh)}
    detail = f"{len(fresh)} calls on never-seen inputs: median {f_med:.4g} ms vs {c_med:.4g} ms rotating"
    if replay:
        factor = c_med / f_med
        if base and record.speedup:
            # paired with the baseline on the same fresh inputs; never raised above the rotating figure
            factor = min(1.0, statistics.median(base) / f_med / record.speedup)
        scale_speedups(record, factor)
        detail += f"; speedup taken from the fresh-input calls ({factor:.3g}x)"
    record.set_check("fresh_input_timing", not replay, detail)


def _overhead(blocks: list[tuple[float, float, int]]) -> float:
    """Median per-call time the orchestrator saw that the side's own clock did not report."""
    per_block = [(wall - reported) / max(n, 1) for wall, reported, n in blocks]
    return statistics.median(per_block) if per_block else 0.0


def _jitter(blocks: list[tuple[float, float, int]]) -> float | None:
    """Robust spread (1.4826 x MAD, ms) of the per-block time the orchestrator saw that the side did not report:
    the pipe round trips' jitter the 2 ms-per-block allowance stands for, measured (recorded, not yet the rule)."""
    per_block = [wall - reported for wall, reported, _ in blocks]
    if len(per_block) < 3:
        return None
    med = statistics.median(per_block)
    return 1.4826 * statistics.median(abs(x - med) for x in per_block)


def _calls_per_block(outer: OuterBlocks) -> float:
    sizes = [n for blocks in outer.values() for _, _, n in blocks]
    return max(statistics.median(sizes), 1) if sizes else 10.0


def _per_call(blocks: list[tuple[float, float, int]]) -> float | None:
    """Median per-call time on the orchestrator's clock."""
    per_block = [wall / max(n, 1) for wall, _, n in blocks]
    return statistics.median(per_block) if per_block else None


def wallclock_crosscheck(
    record: Record, timing: dict[str, Any], walls: Samples, outer: OuterBlocks, c_med: float | None, opts: Options
) -> None:
    """Wall-clock cross-check. Inside each worker: per-call device-synchronised wall vs event time. Outside, on the
    orchestrator's clock (which the candidate cannot touch): per-call block wall minus reported time, for the
    candidate against the same overhead for the baseline. Hidden work shows up as unexplained time."""
    c_wall = statistics.median(walls["cand"]) if walls["cand"] else None
    b_wall = statistics.median(walls["tf32"]) if walls["tf32"] else None
    inner_ratio = (c_wall / c_med) if (c_wall and c_med) else None
    excess = _overhead(outer["cand"]) - _overhead(outer["tf32"])
    # pipe round trips jitter: 2 ms per block, i.e. 2 / calls per call (blocks of short calls are sized to last
    # opts.target_block_ms, so this is a small fraction of a call; timing.calls_per_block)
    slack = 0.5 * (c_med or 0) + 2.0 / _calls_per_block(outer)
    inner_bad = inner_ratio is not None and inner_ratio > 1.5 and (c_wall or 0) - (c_med or 0) > 0.05
    # On CPU too: the candidate process's own clock can be rebound or its reply forged (A4, A5); only the
    # orchestrator's clock is out of its reach.
    outer_bad = excess > slack
    c_outer, b_outer = _per_call(outer["cand"]), _per_call(outer["tf32"])
    timing["wallclock"] = {
        "candidate_synced_median_ms": c_wall,
        "baseline_synced_median_ms": b_wall,
        "candidate_ratio": inner_ratio,
        "candidate_overhead_ms_per_call": _overhead(outer["cand"]),
        "baseline_overhead_ms_per_call": _overhead(outer["tf32"]),
        "speedup_wallclock": (b_wall / c_wall) if (b_wall and c_wall) else None,
        "speedup_orchestrator_clock": (b_outer / c_outer) if (b_outer and c_outer) else None,
        "overhead_jitter_ms_per_block": {"baseline": _jitter(outer["tf32"]), "candidate": _jitter(outer["cand"])},
        "excess_ms_per_block": excess * _calls_per_block(outer),
    }
    detail = (
        (
            f"synced wall / timed = {inner_ratio:.3f} (limit 1.5); unexplained time per call vs baseline "
            f"{excess:+.4f} ms (limit {slack:.4f} ms)"
        )
        if inner_ratio
        else "no timing data"
    )
    # A failed cross-check means the timed numbers cannot be trusted: the speedup falls back to the clock that saw
    # the work (synced wall for hidden device work, the orchestrator's for forged or rebound clocks). Only ever
    # down: a fallback never raises the timed figure.
    candidates = [
        timing["wallclock"]["speedup_wallclock"] if inner_bad else None,
        timing["wallclock"]["speedup_orchestrator_clock"] if outer_bad else None,
    ]
    fallbacks = [f for f in candidates if f is not None]
    if fallbacks and record.speedup is not None and min(fallbacks) < record.speedup:
        factor = min(fallbacks) / record.speedup
        scale_speedups(record, factor)
        detail += f"; speedup taken from the wall clock ({factor:.3g}x of the timed figure)"
    record.set_check("wallclock_crosscheck", not (inner_bad or outer_bad), detail)


def forged_clock_check(record: Record, forged: list[str]) -> None:
    """Fail timer integrity when the candidate reported more time than the orchestrator saw elapse (the timing loop
    collects those blocks). Only a failure is written here: the worker's own integrity probe sets the pass."""
    record.set_check(
        "timer_integrity",
        False,
        "candidate reported more time than elapsed: " + "; ".join(forged)[:300],
    )


def speedup_plausible_check(record: Record) -> None:
    """Judge the final figure (after both corrections) against EXCESSIVE_SPEEDUP. A soft check, not in HARD_CHECKS:
    a failure does not reject the kernel, it is a signal for review (the audit reads it as suspicious)."""
    speedup = record.speedup
    if speedup is not None:
        plausible = speedup <= EXCESSIVE_SPEEDUP
        record.set_check(
            "speedup_plausible",
            plausible,
            f"speedup {speedup:.3g}x " + ("<=" if plausible else "> ") + f"{EXCESSIVE_SPEEDUP:g}x",
        )


def describe_pairs(
    timing: dict[str, Any],
    pairs: list[Any],
    *,
    wanted: int,
    block_calls: int,
    skipped: str,
    opts: Options,
    host: dict[str, float] | None = None,
) -> None:
    """Per-process-pair medians (`timing.pairs`), so a reader sees the spread between processes that the interval
    covers, and how the blocks were sized. `pairs`: pair_policy.PairSamples."""
    timing["block_calls"] = block_calls
    timing["order"] = f"alternating blocks (ABAB), {block_calls} calls per block"
    made = log_ratio_interval([(p.times["tf32"], p.times["cand"]) for p in pairs], bootstrap=False)
    rows = []
    for index, pair in enumerate(pairs, 1):
        base, cand = pair.times["tf32"], pair.times["cand"]
        row: dict[str, Any] = {
            "pair": index,
            "baseline_tf32_median_ms": statistics.median(base) if base else None,
            "candidate_median_ms": statistics.median(cand) if cand else None,
            "speedup": pooled_ratio([(base, cand)]),
            "calls": len(cand),
            "placed_beside": {"evaluations": pair.neighbours[0], "declared_bytes": pair.neighbours[1]},
        }
        if made is not None and made.set_aside == index:
            row["set_aside"] = True
        rows.append(row)
    timing["pairs"] = rows
    host = host or {}
    timing["host_fraction"] = {
        "baseline_tf32": host.get("tf32"),
        "candidate": host.get("cand"),
        "method": "median host time of a call (until it returned) / median event time, first pair (CUDA only)",
    }
    timing["process_pairs_policy"] = (
        f"{wanted} pairs wanted (a host time of at least {opts.host_bound_fraction:.0%} of the event time on "
        f"either side: {max(opts.process_pairs, opts.launch_bound_pairs)} pairs; baseline median below "
        f"{opts.pairs_below_ms:g} ms: {opts.process_pairs} pairs; buffers placed while other evaluations held "
        f"device memory (at least {opts.placement_beside_gib:g} GiB declared): {opts.placement_pairs}; either way "
        f"up to {opts.max_process_pairs} while their speedups spread by more than {opts.pair_agreement:.0%}, and a "
        f"third when two pairs' interval is wider than {opts.ci_target:.0%}; else 1); "
        f"{skipped or f'{len(pairs)} run'}; a pair whose speedup lies far from the others' is set aside as a deviant "
        f"process (pair_interval.deviant_pair)"
    )


def stability_check(record: Record, timing: dict[str, Any], pairs: list[Pair], opts: Options) -> None:
    """`timing.unstable`: the speedup's interval from the process pairs (a deviant pair set aside) is wider than
    opts.unstable_width (high / low), so it cannot rank anything. Such a figure is recorded but not ranked
    (evaluator/selectors/eligibility.py); the check `timing_stable` says why. Not a rejection: nothing says the
    kernel cheated, only that its speed depends on the process it runs in more than the harness can pin down.
    Judged with more than one pair only: one pair's interval is its calls' precision."""
    timing["unstable"] = False
    if len(pair_log_ratios(pairs)) < 2:
        return
    made = log_ratio_interval(pairs, bootstrap=False)
    reason = interval_unstable(made, opts.unstable_width)
    timing["unstable"] = bool(reason)
    if reason:
        timing["unstable_reason"] = f"timing unstable: {reason} after {len(pairs)} process pairs"
        record.set_check("timing_stable", False, timing["unstable_reason"])
    elif made is not None:
        aside = f" (pair {made.set_aside} set aside as a deviant process)" if made.set_aside else ""
        record.set_check(
            "timing_stable",
            True,
            f"{len(pairs)} process pairs' interval {made.width:.3g}x wide{aside}, within {opts.unstable_width:g}x",
        )


def describe_precision(timing: dict[str, Any], stopped: list[str], opts: Options) -> None:
    """How precise the speedup came out against the target (`timing.precision`), and why each pair's timed blocks
    stopped: a target met early saves GPU time, a budget or call cap reached says the spread needed more."""
    half = timing.get("ci_half_width")
    timing["precision"] = {
        "ci_target": opts.ci_target,
        "ci_half_width": half,
        "met": None if half is None or opts.ci_target <= 0 else half <= opts.ci_target,
        "pairs_stopped_by": stopped,
    }
