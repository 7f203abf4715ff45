"""When the speedup's interval from the process pairs is wider than 2x (a deviant pair set aside), the record says
`timing unstable` (timing.unstable, its reason, check timing_stable failed) instead of offering a number it cannot
stand behind; one deviant pair alone never does that."""

from __future__ import annotations

from evaluator.harness.orchestrator.timing_record import stability_check
from evaluator.harness.protocol import Options, empty_result, get_check, validate_result


def _pair(ratio: float, spread: float = 0.001) -> tuple[list[float], list[float]]:
    return [1.0, 1.0 + spread, 1.0 - spread], [1.0 / ratio] * 3


def test_the_record_says_timing_unstable_when_the_interval_is_wider_than_two_x():
    opts = Options.build({})
    disagree = [_pair(0.5), _pair(1.0), _pair(1.9)]  # no deviant: an even spread, a t-interval far over 2x
    record = empty_result()
    stability_check(record, disagree, opts)
    assert record["timing"]["unstable"] is True
    assert record["timing"]["unstable_reason"].startswith("timing unstable: the speedup's interval")
    assert "after 3 process pairs" in record["timing"]["unstable_reason"]
    check = get_check(record, "timing_stable")
    assert check is not None and check["passed"] is False and "timing unstable" in check["detail"]
    validate_result(record)
    # one pair (a long problem): its interval is its calls' precision, no check
    record = empty_result()
    stability_check(record, [_pair(1.3)], opts)
    assert record["timing"]["unstable"] is False and get_check(record, "timing_stable") is None


def test_one_deviant_pair_does_not_make_the_timing_unstable():
    opts = Options.build({})
    record = empty_result()
    stability_check(record, [_pair(1.02), _pair(1.05), _pair(1.06), _pair(2.4)], opts)
    assert record["timing"]["unstable"] is False
    check = get_check(record, "timing_stable")
    assert check is not None and check["passed"] is True and "pair 4 set aside as a deviant process" in check["detail"]


def test_an_evaluation_whose_pairs_disagree_to_the_end_is_marked_unstable(evaluate):
    """Through the harness on CPU: two pairs, no third allowed, and any width of their interval counts
    (unstable_width 1), so the timing is unstable. The kernel is not rejected: the record keeps its figures and
    says why they are not ranked."""
    record = evaluate(
        "linear_bn",
        "linear_bn_correct",
        process_pairs=2,
        max_process_pairs=2,
        pair_agreement=0.0,
        unstable_width=1.0,
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
        unstable_width=1e9,
        pairs_below_ms=1000.0,
    )
    assert stable["timing"]["unstable"] is False and get_check(stable, "timing_stable")["passed"] is True
