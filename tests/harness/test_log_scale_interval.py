"""The speedup's interval is made on the log scale from the process pairs' medians: always above 0, symmetric in
log space ([x / f, x * f]), and the point estimate is the median of the pairs' log speedups, which one deviant pair
cannot move; from three pairs on, a deviant pair is set aside, so it cannot widen the interval either."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from evaluator.harness.pair_interval import (
    Interval,
    deviant_pair,
    interval_unstable,
    log_ratio_interval,
    median_efficiency,
    pair_log_ratios,
    robust_log_ratio,
)
from evaluator.harness.timing import pooled_ratio, t975


def _made(pairs, **kwargs) -> tuple[float, tuple[float, float], float, str]:
    made = log_ratio_interval(pairs, **kwargs)
    assert isinstance(made, Interval)
    return made.speedup, (made.low, made.high), made.half, made.method


def _calls(median: float, n: int, seed: int, spread: float = 0.01) -> list[float]:
    rng = random.Random(seed)
    return [median * (1 + rng.gauss(0, spread)) for _ in range(n)]


def _pairs(ratios: list[float], calls: int = 200, noise: float = 0.01) -> list[tuple[list[float], list[float]]]:
    return [(_calls(1.0, calls, 2 * i, noise), _calls(1.0 / r, calls, 2 * i + 1, noise)) for i, r in enumerate(ratios)]


@pytest.mark.parametrize(
    "ratios",
    [
        [0.077],  # a slow kernel: the interval that read [0.000, 0.780]
        [1.0, 1.3],  # two pairs that disagree
        [1.0, 0.05, 1.02],  # one pair 20x off
        [1.06, 1.40, 1.26, 3.31, 1.23],  # the five L2/14 figures, as pairs
        [0.3, 3.0, 0.3, 3.0],  # pairs all over the place
    ],
)
def test_the_interval_is_above_zero_and_symmetric_in_log_space(ratios):
    point, (low, high), half, method = _made(_pairs(ratios, noise=0.2), resamples=200, seed=1)
    assert 0 < low <= point <= high
    assert math.log(point) - math.log(low) == pytest.approx(math.log(high) - math.log(point), abs=1e-9)
    assert math.log(high / low) == pytest.approx(2 * half)
    assert method


def test_one_wild_pair_does_not_move_the_estimate():
    agree = [1.00, 1.01, 0.99, 1.00]
    wild = [1.00, 1.01, 0.99, 3.50]  # one process ran 3.5x (a neighbour's start-up, a slow host)
    p_agree = _made(_pairs(agree), resamples=100)[0]
    p_wild = _made(_pairs(wild), resamples=100)[0]
    assert p_wild == pytest.approx(p_agree, rel=0.012)  # between the two middle pairs either way
    # the pooled ratio of medians, the previous point estimate, is dragged by it (more calls from the wild pair)
    heavy = _pairs(wild)
    heavy[-1] = (heavy[-1][0] * 3, heavy[-1][1] * 3)
    assert abs(pooled_ratio(heavy) - 1.0) > 0.2
    assert _made(heavy, resamples=100)[0] == pytest.approx(p_agree, rel=0.012)
    # and however far the wild pair goes, the median stays among the others
    for far in (0.01, 0.5, 50.0):
        point = _made(_pairs([1.00, 1.01, 0.99, far]), resamples=100)[0]
        assert 0.98 < point < 1.02


def test_the_point_is_the_median_of_the_pairs_log_speedups():
    pairs = _pairs([0.8, 1.0, 1.5], noise=0.0)
    logs = pair_log_ratios(pairs)
    assert robust_log_ratio(logs) == pytest.approx(math.log(1.0))
    assert _made(pairs, resamples=50)[0] == pytest.approx(1.0)
    assert robust_log_ratio([]) is None
    # a pair with a side empty or at zero has no log speedup and is left out
    assert pair_log_ratios([([], [1.0]), ([0.0, 0.0], [1.0, 1.0]), ([2.0], [1.0])]) == [math.log(2.0)]
    assert log_ratio_interval([([], [])]) is None


def test_three_pairs_or_more_use_the_t_interval_of_their_log_speedups():
    ratios = [1.00, 0.92, 1.06, 0.97]
    pairs = _pairs(ratios, calls=300, noise=0.005)
    point, (low, high), half, method = _made(pairs, resamples=100)
    logs = pair_log_ratios(pairs)
    expected = t975(3) * median_efficiency(4) * statistics.stdev(logs) / 2
    assert half == pytest.approx(expected)
    assert "t-interval of 4 process pairs" in method
    assert point == pytest.approx(math.exp(statistics.median(logs)))


def test_pairs_that_agree_by_chance_keep_the_calls_own_precision():
    """Three pairs with identical medians: no spread between them, yet the interval is as wide as their calls
    allow, never a point."""
    base = _calls(1.0, 100, 1, 0.05)
    cand = _calls(0.5, 100, 2, 0.05)
    point, (low, high), half, _ = _made([(base, cand)] * 3, resamples=100)
    assert half > 0.005 and low < point < high


def test_one_pair_is_its_bootstrap_and_two_pairs_hold_both_pairs_intervals():
    one = _pairs([2.0], noise=0.02)
    point, (low, high), half, method = _made(one, resamples=300, seed=3)
    assert point == pytest.approx(pooled_ratio(one)) and "one process pair" in method
    assert 0.0 < half < 0.02  # 200 calls at 2 % noise: well under 2 %
    two = _pairs([1.0, 1.3], noise=0.01)
    point, (low, high), half, method = _made(two, resamples=300, seed=3)
    assert point == pytest.approx(math.sqrt(1.0 * 1.3), rel=0.01)  # their geometric mean
    assert low < 1.0 and high > 1.3  # each pair's ratio, and its own interval around it
    assert "holding each of the 2 process pairs" in method


def test_two_pairs_that_agree_by_chance_get_the_one_degree_of_freedom_interval():
    """Two pairs 1 % apart: the hull of their own intervals would be about +-0.6 %, and two draws land on the same
    side of the truth half the time; the t-interval with one degree of freedom (12.7 x their half-difference)
    says how little two pairs know about the spread between processes."""
    two = _pairs([1.00, 1.01], noise=0.002)
    point, (low, high), half, method = _made(two, resamples=200, seed=3)
    first, second = pair_log_ratios(two)
    assert abs(second - first) == pytest.approx(math.log(1.01), rel=0.2)
    assert half == pytest.approx(t975(1) * abs(second - first) / 2)
    assert "1 degree of freedom" in method
    # without the bootstrap (the timing loop's quick decision) the same t-interval
    assert _made(two, bootstrap=False)[2] == pytest.approx(half, rel=1e-6)


def test_the_interval_covers_a_true_ratio_of_one_about_95_percent_of_the_time():
    """Four pairs whose speedups scatter 5 % around 1.0 (the same code on both sides, per-process speed): the
    interval holds 1.0 in most evaluations, and never reaches 0."""
    rng = random.Random(7)
    held = 0
    for e in range(60):
        ratios = [math.exp(rng.gauss(0, 0.05)) for _ in range(4)]
        pairs = [(_calls(1.0, 60, 1000 * e + i), _calls(1.0 / r, 60, 1000 * e + 50 + i)) for i, r in enumerate(ratios)]
        _, (low, high), _, _ = _made(pairs, resamples=50, seed=e)
        assert low > 0
        held += low <= 1.0 <= high
    assert held >= 52  # 95 % of 60 is 57; the margin keeps the test about logic, not luck


def test_one_deviant_pair_is_set_aside_and_cannot_widen_the_interval():
    """The H200 case: a real kernel's pairs read 1.02-1.07x, one 2.2x (its baseline process ran 50 % slow). With all
    four in a t-interval it spanned [0.49, 2.33] and the figure was `timing unstable`; the deviant pair set aside,
    the interval is the other three's and holds their spread, and the record names the pair left out."""
    ratios = [1.02, 1.055, 1.07, 2.2]
    made = log_ratio_interval(_pairs(ratios, noise=0.01), resamples=100)
    assert made is not None and made.set_aside == 4 and made.set_aside_speedup == pytest.approx(2.2, rel=0.01)
    assert made.low < 1.02 and made.high > 1.07  # holds the three that agree
    assert made.width < 1.3 and not interval_unstable(made)
    assert "pair 4 of 4 set aside as a deviant process" in made.method
    # wherever the deviant lands, the interval stays that of the others
    for far in (0.4, 1.5, 5.0, 50.0):
        other = log_ratio_interval(_pairs([1.02, 1.055, 1.07, far], noise=0.01), resamples=100)
        assert other is not None and other.set_aside == 4 and other.width < 1.3


def test_a_spread_is_not_a_deviant_and_two_pairs_have_none():
    # pairs that spread evenly: none stands out from the others' range, none is set aside
    assert deviant_pair([math.log(r) for r in (0.92, 1.0, 1.06, 0.97)]) is None
    assert deviant_pair([math.log(r) for r in (0.8, 1.0, 1.25)]) is None
    # with two pairs there is no telling which one deviates
    assert deviant_pair([0.0, math.log(2.0)]) is None
    assert deviant_pair([math.log(r) for r in (1.0, 1.01, 1.5)]) == 2


def test_an_interval_wider_than_two_x_is_unstable():
    wide = log_ratio_interval(_pairs([0.6, 1.6], noise=0.01), resamples=50)
    assert wide is not None and wide.width > 2 and "wide, more than 2x" in interval_unstable(wide)
    narrow = log_ratio_interval(_pairs([1.0, 1.001], noise=0.001), resamples=50)
    assert narrow is not None and interval_unstable(narrow) == ""
    assert interval_unstable(None) == "" and interval_unstable(narrow, width=1.0)  # the option decides
