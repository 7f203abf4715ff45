"""When the process pairs still disagree after the most the harness may run, the record says `timing unstable`
(timing.unstable, its reason, check timing_stable failed) instead of offering a number it cannot stand behind."""

from __future__ import annotations

import math

from evaluator.harness.orchestrator.timing_record import stability_check
from evaluator.harness.protocol import Options, empty_result, get_check, validate_result
from evaluator.harness.timing import pairs_unstable


def _pair(ratio: float) -> tuple[list[float], list[float]]:
    return [1.0, 1.0, 1.0], [1.0 / ratio] * 3


def test_pairs_that_agree_are_stable_and_pairs_that_disagree_are_not():
    logs = [math.log(r) for r in (1.00, 1.02, 0.99)]
    assert pairs_unstable(logs, 0.05) == ""
    spread = [math.log(r) for r in (1.00, 1.20)]
    reason = pairs_unstable(spread, 0.05)
    assert "2 process pairs" in reason and "20.0%" in reason and "5%" in reason
    assert pairs_unstable([0.0], 0.0) == "" and pairs_unstable([], 0.0) == ""


def test_one_deviant_pair_out_of_three_or_more_is_set_aside_two_are_not():
    assert pairs_unstable([math.log(r) for r in (1.00, 1.01, 2.50)], 0.05) == ""
    assert pairs_unstable([math.log(r) for r in (1.00, 1.01, 0.99, 0.40)], 0.05) == ""
    two_deviant = [math.log(r) for r in (1.00, 1.01, 1.30, 0.70)]
    assert "the most deviant set aside" in pairs_unstable(two_deviant, 0.05)


def test_the_record_says_timing_unstable_only_when_no_more_pairs_may_run():
    opts = Options.build({})
    disagree = [_pair(1.0), _pair(1.25), _pair(0.8)]
    record = empty_result()
    stability_check(record, disagree, ran_out=True, opts=opts)
    assert record["timing"]["unstable"] is True
    assert record["timing"]["unstable_reason"].startswith("timing unstable: 3 process pairs")
    check = get_check(record, "timing_stable")
    assert check is not None and check["passed"] is False and "timing unstable" in check["detail"]
    validate_result(record)
    # the harness may still run another pair: not yet a verdict
    record = empty_result()
    stability_check(record, disagree, ran_out=False, opts=opts)
    assert record["timing"]["unstable"] is False and get_check(record, "timing_stable") is not None
    # one pair (a long problem): nothing to disagree, no check
    record = empty_result()
    stability_check(record, [_pair(1.3)], ran_out=True, opts=opts)
    assert record["timing"]["unstable"] is False and get_check(record, "timing_stable") is None


def test_an_evaluation_whose_pairs_disagree_to_the_end_is_marked_unstable(evaluate):
    """Through the harness on CPU: two pairs, no third allowed, and any difference between them counts
    (unstable_agreement 0), so the two pairs' speedups, never exactly equal, leave the timing unstable. The kernel
    is not rejected: the record keeps its figures and says why they are not ranked."""
    record = evaluate(
        "linear_bn",
        "linear_bn_correct",
        process_pairs=2,
        max_process_pairs=2,
        pair_agreement=0.0,
        unstable_agreement=0.0,
        pairs_below_ms=1000.0,
    )
    validate_result(record)
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    timing = record["timing"]
    assert len(timing["pairs"]) == 2
    assert timing["unstable"] is True, timing
    assert "after 2 process pairs" in timing["unstable_reason"]
    assert get_check(record, "timing_stable")["passed"] is False
    low, high = record["speedup_ci"]
    assert 0 < low <= record["speedup"] <= high
    # the same evaluation with a tolerance no CPU run reaches: stable
    stable = evaluate(
        "linear_bn",
        "linear_bn_correct",
        process_pairs=2,
        max_process_pairs=2,
        pair_agreement=0.0,
        unstable_agreement=100.0,
        pairs_below_ms=1000.0,
    )
    assert stable["timing"]["unstable"] is False and get_check(stable, "timing_stable")["passed"] is True
