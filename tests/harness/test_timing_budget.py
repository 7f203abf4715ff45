"""Where timing spends GPU time: a side may stop after `min_calls` calls or `min_timed_ms` of timed calls, whichever
comes first; blocks of long calls are short; the FP32 standard-protocol speedup is the headline speedup times the
FP32 / TF32 ratio of the one process pair that timed FP32. Pure arithmetic on the CPU."""

from __future__ import annotations

import statistics

import pytest

from evaluator.harness.orchestrator.pair_policy import pair_budget_s
from evaluator.harness.orchestrator.timing_record import fp32_speedup
from evaluator.harness.protocol import Options
from evaluator.harness.timing import LONG_BLOCK_TARGETS, calls_per_block, enough_calls


def test_a_side_stops_after_its_call_count_or_its_timed_time_whichever_comes_first():
    assert not enough_calls([40.0] * 7, 100, 300.0)  # 280 ms of 40 ms calls: not yet
    assert enough_calls([40.0] * 8, 100, 300.0)  # 320 ms: enough, after 8 calls instead of 100
    assert not enough_calls([0.3] * 99, 100, 300.0)  # short calls: the count decides
    assert enough_calls([0.3] * 100, 100, 300.0)
    assert not enough_calls([40.0] * 99, 100, 0.0)  # 0: the count alone (the old rule)


def test_the_default_floor_is_both_a_count_and_a_time():
    opts = Options.build()
    assert opts.min_calls == 100 and opts.min_timed_ms == 300.0
    assert Options.build({"min_timed_ms": 0}).min_timed_ms == 0


@pytest.mark.parametrize(
    ("per_call_ms", "expected"),
    [(0.1, 200), (2.0, 10), (5.0, 10), (20.0, 5), (40.0, 3), (100.0, 1), (400.0, 1)],
)
def test_blocks_last_the_target_for_short_calls_and_about_five_targets_for_long_ones(per_call_ms, expected):
    block = calls_per_block(10, per_call_ms, 20.0, 1000)
    assert block == expected
    assert block * per_call_ms >= min(20.0, per_call_ms)  # never shorter than the target (or one call)
    if block < 10:  # shortened: a block lasts about LONG_BLOCK_TARGETS targets, not ten long calls
        assert block * per_call_ms < LONG_BLOCK_TARGETS * 20.0 + per_call_ms


def test_the_fp32_speedup_is_the_speedup_times_the_first_pairs_fp32_over_tf32_ratio():
    pair1 = ([2.0, 2.1, 1.9], [1.0, 1.0, 1.0])  # (tf32, candidate) of the pair that also timed FP32
    pair2 = ([2.4, 2.5, 2.6], [1.2, 1.2, 1.2])  # a slower process: both sides slower
    fp32 = [6.0, 6.2, 5.8]  # three times the first pair's TF32
    got = fp32_speedup(2.0, {"fp32": fp32, "tf32": pair1[0] + pair2[0]}, [pair1, pair2])
    assert got == pytest.approx(2.0 * statistics.median(fp32) / statistics.median(pair1[0]))
    assert got == pytest.approx(6.0)
    # pooling FP32 over the kernel's calls of both processes would have mixed the slow process into one side only
    pooled = statistics.median(fp32) / statistics.median(pair1[1] + pair2[1])
    assert pooled != pytest.approx(got)


def test_no_fp32_speedup_without_fp32_calls():
    assert fp32_speedup(1.5, {"fp32": [], "tf32": [1.0]}, None) is None
    assert fp32_speedup(1.5, {"fp32": [3.0], "tf32": [1.0]}, None) == pytest.approx(4.5)


def test_the_timing_budget_is_the_evaluations_shared_over_its_pairs():
    opts = Options.build({"timing_budget_s": 12.0})
    assert pair_budget_s(opts, 0.0, 0, 1) == 6.0  # the first pair: half
    assert pair_budget_s(opts, 6.0, 1, 3) == 3.0  # two more wanted: the rest shared
    assert pair_budget_s(opts, 9.0, 2, 3) == 3.0
    assert pair_budget_s(opts, 12.5, 3, 4) == 0.0  # spent: a fourth pair times only its minimum
    # in all, an evaluation's timed loops stay near the budget however many pairs run (each pair's minimum apart)
    spent, done = 0.0, 0
    for wanted in (1, 3, 3, 4):
        spent += pair_budget_s(opts, spent, done, wanted)
        done += 1
    assert spent <= opts.timing_budget_s
