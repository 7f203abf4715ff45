"""The speedup and its interval from an evaluation's process pairs, on the log scale, and when that interval is too
wide to rank. stdlib only.

A speedup is a ratio: its error is multiplicative, and an interval computed on the ratio itself can reach 0 or below
(seen: 0.077 [0.000, 0.780]). Everything here works on log(baseline median / candidate median) per process pair, so
exp() of the interval is always above 0 and the interval is symmetric in log space: x / f to x * f.

One deviant pair must not decide the figure. On the H200, eight evaluations at once, a real kernel's four pairs read
1.02-1.07x but one 2.0-2.5x (its baseline process ran 50 % slow): the t-interval of all four pairs spanned
[0.49, 2.33] and all five repeats were called `timing unstable`, while the repeats themselves agreed within 3.6 %.
So the point is the median of the pairs' log speedups, and from three pairs on the pair farthest from the others is
set aside when it is a deviant process, not a spread (DEVIANT_LOG_FLOOR, DEVIANT_SPREADS): the interval comes from
the pairs that agree, and the record names the one left out.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from evaluator.harness.timing import Pair, analytic_log_half_width, t975

# Standard error of the median of k normal draws over that of their mean (exact for 2-6 draws, 1.2533 as k grows):
# the interval is centred on the median of the pairs' log speedups, so its standard error is scaled by this.
_MEDIAN_EFFICIENCY = {1: 1.0, 2: 1.0, 3: 1.160, 4: 1.092, 5: 1.197, 6: 1.135}
# A pair is a deviant process (set aside) when its log speedup lies farther from the median of the others than both
# log(1 + 10 %) and DEVIANT_SPREADS times the others' own range: a process that ran at another speed, not a spread
# the others share. Between-process spreads measured on the H200 are 0.2-6 % (benchmarks/results/).
DEVIANT_LOG_FLOOR = math.log1p(0.10)
DEVIANT_SPREADS = 3.0
# An interval wider than this (high / low) cannot rank anything: the figure is `timing unstable` (the harness's
# unstable_width option).
UNSTABLE_WIDTH = 2.0


def median_efficiency(k: int) -> float:
    return _MEDIAN_EFFICIENCY.get(k, 1.2533)


def pair_log_ratios(pairs: Sequence[Pair]) -> list[float]:
    """log(median baseline / median candidate) of each process pair; a pair with a side empty or not above 0 is
    left out (no log of it exists)."""
    logs = []
    for base, cand in pairs:
        if base and cand:
            b, c = statistics.median(base), statistics.median(cand)
            if b > 0 and c > 0 and math.isfinite(b) and math.isfinite(c):
                logs.append(math.log(b / c))
    return logs


def robust_log_ratio(logs: Sequence[float]) -> float | None:
    """The point estimate: the median of the pairs' log speedups. From three pairs on, one deviant pair (a process
    whose host ran slow, a neighbour's start-up) cannot move it past the other pairs; with two it is their
    geometric mean (no estimator can tell which of two is the deviant: the pairs' disagreement says so instead)."""
    return statistics.median(logs) if logs else None


def deviant_pair(logs: Sequence[float]) -> int | None:
    """The index of the one pair to set aside, or None: from three pairs on, the pair farthest from the median of
    the others when it lies beyond max(DEVIANT_LOG_FLOOR, DEVIANT_SPREADS x the others' range)."""
    if len(logs) < 3:
        return None
    distances = []
    for index, log in enumerate(logs):
        others = [x for i, x in enumerate(logs) if i != index]
        distances.append((abs(log - statistics.median(others)), index, max(others) - min(others)))
    distance, index, spread = max(distances)
    return index if distance > max(DEVIANT_LOG_FLOOR, DEVIANT_SPREADS * spread) else None


def within_pair_log_half_width(
    base: Sequence[float], cand: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> float | None:
    """Half-width of the 95 % percentile bootstrap of one pair's log speedup, made symmetric: the larger of the two
    distances from the pair's own log speedup (resampling each side's calls)."""
    base = [t for t in base if t > 0]
    cand = [t for t in cand if t > 0]
    if len(base) < 2 or len(cand) < 2:
        return None
    rng = random.Random(seed)
    point = math.log(statistics.median(base) / statistics.median(cand))
    logs = sorted(
        math.log(statistics.median(rng.choices(base, k=len(base))) / statistics.median(rng.choices(cand, k=len(cand))))
        for _ in range(resamples)
    )
    low, high = logs[int(0.025 * (len(logs) - 1))], logs[int(0.975 * (len(logs) - 1))]
    return max(point - low, high - point, 0.0)


@dataclass
class Interval:
    """The speedup from the process pairs and its 95 % interval [low, high] = [speedup / f, speedup * f] with
    f = exp(half), how it was made, and the pair set aside as a deviant process (1-based; None: none)."""

    speedup: float
    low: float
    high: float
    half: float
    method: str
    set_aside: int | None = None
    set_aside_speedup: float | None = None

    @property
    def width(self) -> float:
        """high / low: 1 for a point, UNSTABLE_WIDTH and above for a figure that cannot be ranked."""
        return self.high / self.low if self.low > 0 else math.inf


def log_ratio_interval(
    pairs: Sequence[Pair], *, resamples: int = 2000, seed: int = 0, bootstrap: bool = True
) -> Interval | None:
    """The speedup, its 95 % interval, the interval's half-width in log space and how it was made, from the
    process pairs' medians (None when no pair has both sides timed).

    Point: exp(median of the pairs' log speedups) (robust_log_ratio), after setting aside a deviant pair
    (deviant_pair; from three pairs on).
    Two pairs or more kept: the t-interval of their log speedups (k - 1 degrees of freedom), centred on that point,
    its standard error scaled by median_efficiency(k) because the centre is a median; never narrower than what the
    calls themselves allow (the pairs' median within-pair half-width / sqrt(k)), so pairs that agree by chance do
    not make an interval their calls cannot support. Two pairs give one degree of freedom (t = 12.7): their
    interval is narrow only when they agree closely, which is what decides whether a third pair is run
    (timing_phase); without it two pairs that agree within a few per cent by chance cover the truth about half the
    time (benchmarks/pairs_coverage_sim.py).
    One or two pairs kept: also a bootstrap over each pair's calls on the log scale; the interval holds every kept
    pair's own interval (the largest of |pair's log speedup - point| + its half-width). `bootstrap` False: the
    calls' precision from their robust errors instead (analytic_log_half_width), for quick decisions."""
    timed = [(list(b), list(c)) for b, c in pairs if pair_log_ratios([(b, c)])]
    all_logs = pair_log_ratios(timed)
    aside = deviant_pair(all_logs)
    kept = [pair for index, pair in enumerate(timed) if index != aside]
    logs = [log for index, log in enumerate(all_logs) if index != aside]
    point = robust_log_ratio(logs)
    if point is None:
        return None
    k = len(logs)
    half = 0.0
    methods = []
    if k >= 2:
        between = t975(k - 1) * median_efficiency(k) * statistics.stdev(logs) / math.sqrt(k)
        within = [analytic_log_half_width(b, c) for b, c in kept]
        floor = statistics.median(within) / math.sqrt(k) if all(math.isfinite(w) for w in within) else 0.0
        half = max(between, floor)
        methods.append(
            f"t-interval of {k} process pairs' log speedups around their median (t {t975(k - 1):.3g}, "
            f"{k - 1} degree{'s' if k > 2 else ''} of freedom), at least the calls' own precision"
        )
    if k <= 2:
        for index, ((b, c), log) in enumerate(zip(kept, logs, strict=True)):
            if bootstrap:
                own = within_pair_log_half_width(b, c, resamples=resamples, seed=seed + index)
            else:
                own = analytic_log_half_width(b, c)
            if own is None or not math.isfinite(own):  # a side with one call: the pair's ratio alone
                own = 0.0
            half = max(half, abs(log - point) + own)
        methods.append(
            "bootstrap over calls on the log scale (one process pair)"
            if k == 1
            else f"holding each of the {k} process pairs' own bootstrap intervals over calls (log scale)"
        )
    made = Interval(math.exp(point), math.exp(point - half), math.exp(point + half), half, "; ".join(methods))
    if aside is not None:
        made.set_aside, made.set_aside_speedup = aside + 1, math.exp(all_logs[aside])
        made.method += (
            f"; pair {aside + 1} of {len(all_logs)} set aside as a deviant process ({made.set_aside_speedup:.3g}x, "
            f"beyond {math.expm1(DEVIANT_LOG_FLOOR):.0%} and {DEVIANT_SPREADS:g}x the others' spread from them)"
        )
    return made


def interval_unstable(made: Interval | None, width: float = UNSTABLE_WIDTH) -> str:
    """Why the figure cannot be ranked ('' when it can): its interval is wider than `width` (high / low)."""
    if made is None or made.width <= width:
        return ""
    return f"the speedup's interval [{made.low:.3g}, {made.high:.3g}] is {made.width:.2f}x wide, more than {width:g}x"
