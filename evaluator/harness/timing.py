"""Timing loops and statistics. The candidate worker passes clock functions it captured before candidate code was
imported, so a patched `time.perf_counter` or `torch.cuda.Event` cannot reach these loops."""

from __future__ import annotations

import math
import os
import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

_urandom = os.urandom  # captured before any candidate code runs


def time_calls(
    fn: Callable[..., Any],
    input_sets: Sequence[Sequence[Any]],
    n: int,
    offset: int,
    *,
    cuda: bool,
    flush: Callable[[], None],
    clock_ns: Callable[[], int],
    event_cls: Any = None,
    synchronize: Callable[[], None] | None = None,
    keep: dict[int, Any] | None = None,
    lead: Callable[[], None] | None = None,
    host: list[float] | None = None,
) -> tuple[list[float], list[float]]:
    """Time `n` calls rotating through `input_sets`. Returns per-call times (ms: CUDA events, or the CPU clock) and
    per-call device-synchronised wall times (ms). With `keep`, one output per input set, chosen uniformly at random
    among that set's calls (reservoir sampling), is kept for re-checks: a kernel cannot tell which call is checked.
    With `lead` (CUDA: lead.LaunchLead), the start event is recorded behind the lead kernel and the call launched
    while it holds the GPU, so the host's latency to the first kernel is not timed; the wall leaves the lead out.
    With `host` (CUDA), each call's host time (ms until it returns, before the synchronise) is appended to it: a call
    whose host time is about its event time is launch-bound, and timed at the speed of its process's host."""
    times: list[float] = []
    walls: list[float] = []
    seen: dict[int, int] = {}
    for i in range(n):
        index = (offset + i) % len(input_sets)
        args = input_sets[index]
        if cuda:
            assert synchronize is not None and event_cls is not None
            flush()
            synchronize()
            start, end = event_cls(enable_timing=True), event_cls(enable_timing=True)
            mark = event_cls(enable_timing=True) if lead is not None else None
            t0 = clock_ns()
            if lead is not None and mark is not None:
                mark.record()
                lead()  # the start event below fires only when the lead ends
            start.record()
            h0 = clock_ns()
            out = fn(*args)
            h1 = clock_ns()
            end.record()
            synchronize()  # device-wide: work on side streams or left in flight lands in the wall time
            t1 = clock_ns()
            times.append(start.elapsed_time(end))
            walls.append((t1 - t0) / 1e6 - (mark.elapsed_time(start) if mark is not None else 0.0))
            if host is not None:
                host.append((h1 - h0) / 1e6)
        else:
            flush()
            t0 = clock_ns()
            out = fn(*args)
            if synchronize is not None:  # CPU stand-in for a device sync: threads the call left running (A2)
                synchronize()
            t1 = clock_ns()
            times.append((t1 - t0) / 1e6)
            walls.append((t1 - t0) / 1e6)
        if keep is not None:
            seen[index] = seen.get(index, 0) + 1
            if int.from_bytes(_urandom(4), "little") % seen[index] == 0:
                keep[index] = out
        del out
    return times, walls


def summarise(times: Sequence[float]) -> dict[str, Any]:
    """median, IQR, mean, call count, relative standard error of the mean and of the median."""
    n = len(times)
    if n == 0:
        return {"median_ms": None, "iqr_ms": None, "mean_ms": None, "calls": 0, "rse": None, "rse_median": None}
    mean = statistics.fmean(times)
    if n >= 2:
        q = statistics.quantiles(times, n=4, method="inclusive")
        iqr = q[2] - q[0]
        rse = statistics.stdev(times) / math.sqrt(n) / mean if mean > 0 else None
    else:
        iqr, rse = 0.0, None
    robust = rse_median(times)
    return {
        "median_ms": statistics.median(times),
        "iqr_ms": iqr,
        "mean_ms": mean,
        "calls": n,
        "rse": rse,
        "rse_median": robust if math.isfinite(robust) else None,
    }


def rse_median(times: Sequence[float]) -> float:
    """Relative standard error of the median, from the median absolute deviation.

    The adaptive timing loop stops on this, not on the mean's RSE: the speedup is a ratio of medians, and a handful
    of outliers (another process's work, a preempted launch thread) inflates the mean's standard error for hundreds
    of calls while it barely moves the median. 1.4826 * MAD estimates sigma; 1.2533 * sigma / sqrt(n) is the
    median's standard error for normal data."""
    n = len(times)
    if n < 2:
        return math.inf
    med = statistics.median(times)
    if med <= 0:
        return math.inf
    mad = statistics.median(abs(t - med) for t in times)
    return 1.2533 * 1.4826 * mad / math.sqrt(n) / med


def rse(times: Sequence[float]) -> float:
    if len(times) < 2:
        return math.inf
    mean = statistics.fmean(times)
    return statistics.stdev(times) / math.sqrt(len(times)) / mean if mean > 0 else math.inf


def bootstrap_ratio_ci(
    baseline: Sequence[float], candidate: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> list[float] | None:
    """95 % percentile-bootstrap interval of median(baseline) / median(candidate), resampling each side."""
    if len(baseline) < 2 or len(candidate) < 2:
        return None
    rng = random.Random(seed)
    ratios = []
    nb, nc = len(baseline), len(candidate)
    for _ in range(resamples):
        b = statistics.median(rng.choices(baseline, k=nb))
        c = statistics.median(rng.choices(candidate, k=nc))
        if c > 0:
            ratios.append(b / c)
    if not ratios:
        return None
    ratios.sort()
    return [ratios[int(0.025 * (len(ratios) - 1))], ratios[int(0.975 * (len(ratios) - 1))]]


Pair = tuple[Sequence[float], Sequence[float]]  # one process pair's (baseline, candidate) per-call times


def pooled_ratio(pairs: Sequence[Pair]) -> float | None:
    """median(every pair's baseline calls) / median(every pair's candidate calls)."""
    base = [t for b, _ in pairs for t in b]
    cand = [t for _, c in pairs for t in c]
    if not base or not cand:
        return None
    c_med = statistics.median(cand)
    return statistics.median(base) / c_med if c_med > 0 else None


def pair_ratios(pairs: Sequence[Pair]) -> list[float]:
    """Each process pair's own speedup (ratio of its medians); pairs without calls on a side are left out."""
    return [r for r in (pooled_ratio([p]) for p in pairs) if r is not None]


def ratios_disagree(pairs: Sequence[Pair], agreement: float) -> bool:
    """Do the process pairs' own speedups spread by more than `agreement` of their pooled speedup?"""
    ratios = pair_ratios(pairs)
    pooled = pooled_ratio(pairs)
    return bool(pooled and len(ratios) > 1 and (max(ratios) - min(ratios)) / pooled > agreement)


def hierarchical_ratio_ci(pairs: Sequence[Pair], *, resamples: int = 2000, seed: int = 0) -> list[float] | None:
    """95 % interval of the pooled median ratio that covers the spread between processes.

    Each resample draws the process pairs with replacement, then each drawn pair's calls with replacement (both
    sides of a pair together: they ran interleaved in the same period), pools them and takes the ratio of medians.
    With one pair this is bootstrap_ratio_ci. When pairs disagree, resamples made of one pair only land at that
    pair's ratio, so the interval stretches across the pairs' ratios; calls alone cannot do that. The interval is
    widened to hold the pooled ratio itself (with two pairs the percentile interval may otherwise just miss it)."""
    pairs = [(list(b), list(c)) for b, c in pairs if len(b) >= 2 and len(c) >= 2]
    if not pairs:
        return None
    if len(pairs) == 1:
        return bootstrap_ratio_ci(pairs[0][0], pairs[0][1], resamples=resamples, seed=seed)
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        base: list[float] = []
        cand: list[float] = []
        for b, c in rng.choices(pairs, k=len(pairs)):
            base += rng.choices(b, k=len(b))
            cand += rng.choices(c, k=len(c))
        c_med = statistics.median(cand)
        if c_med > 0:
            ratios.append(statistics.median(base) / c_med)
    if not ratios:
        return None
    ratios.sort()
    low, high = ratios[int(0.025 * (len(ratios) - 1))], ratios[int(0.975 * (len(ratios) - 1))]
    point = pooled_ratio(pairs)
    if point is not None:
        low, high = min(low, point), max(high, point)
        half = _between_pairs_half_width(pairs)
        low, high = min(low, point - half), max(high, point + half)
    return [max(low, 0.0), high]


# Student's t, 97.5 % quantile, by degrees of freedom (pairs - 1): with a few pairs the bootstrap over pairs
# under-covers (it only ever sees the pairs it has), the t-interval of their mean does not.
_T975 = {2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def _between_pairs_half_width(pairs: Sequence[Pair]) -> float:
    """Half-width of the 95 % t-interval of the pairs' own speedups (0 below three pairs: with two, one degree of
    freedom gives an interval 25 standard errors wide, and the bootstrap's already spans both pairs' ratios)."""
    ratios = pair_ratios(pairs)
    if len(ratios) < 3:
        return 0.0
    t = _T975.get(len(ratios) - 1, 1.96 if len(ratios) > 30 else 2.262)
    return t * statistics.stdev(ratios) / math.sqrt(len(ratios))


# A block of long calls lasts about this many target_ms (at least one call): `block_calls` 40 ms calls would make
# each of the four minimum blocks per side 400 ms of GPU time that buys no precision the calls do not already have.
LONG_BLOCK_TARGETS = 5


def calls_per_block(block_calls: int, wall_per_call_ms: float | None, target_ms: float, cap: int) -> int:
    """Calls per timed block: `block_calls`, more for short calls so a block lasts `target_ms` on the
    orchestrator's clock (`wall_per_call_ms`: the baseline's per-call wall, flush and sync included), at most
    `cap`; fewer for long calls, so a block lasts about LONG_BLOCK_TARGETS x `target_ms` (at least one call). The
    wall-clock cross-check allows 2 ms of unexplained time per block, i.e. 2 / calls ms per call: with a block of
    at least `target_ms` that is at most 2 / target_ms of a baseline call (10 % at 20 ms)."""
    if not wall_per_call_ms or wall_per_call_ms <= 0 or target_ms <= 0:
        return block_calls
    floor = max(1, min(block_calls, math.ceil(LONG_BLOCK_TARGETS * target_ms / wall_per_call_ms)))
    return max(floor, min(cap, math.ceil(target_ms / wall_per_call_ms)))


def enough_calls(times: Sequence[float], min_calls: int, min_timed_ms: float) -> bool:
    """May a side's timing stop (precision permitting)? After `min_calls` calls, or once its calls add up to
    `min_timed_ms` (0: the count alone), whichever comes first: 100 calls of a 40 ms problem are 4 s of GPU time
    per side, where the median of 25 is already within a fraction of a percent."""
    return len(times) >= min_calls or (min_timed_ms > 0 and sum(times) >= min_timed_ms)


def analytic_log_half_width(base: Sequence[float], cand: Sequence[float]) -> float:
    """1.96 x the standard error of log(median base / median candidate) from each side's robust relative error
    (rse_median): what the adaptive loop stops on, without resampling. inf when a side has under two calls."""
    return 1.96 * math.hypot(rse_median(base), rse_median(cand))


def t975(df: int) -> float:
    """Student's t, 97.5 % quantile (conservative between table entries)."""
    if df < 2:
        return 12.706
    return _T975.get(df, 1.96 if df > 30 else 2.262)
