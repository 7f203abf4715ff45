"""When the speedup's interval from the process pairs is wider than 2x (a deviant pair set aside), the record says
`timing unstable` (timing.unstable, its reason, check timing_stable failed) instead of offering a number it cannot
stand behind; one deviant pair alone never does that."""

from __future__ import annotations

from evaluator.harness.orchestrator.timing_record import stability_check
from evaluator.harness.protocol import Options, Record, Timing, part, result_to_json


def _pair(ratio: float, spread: float = 0.001) -> tuple[list[float], list[float]]:
    return [1.0, 1.0 + spread, 1.0 - spread], [1.0 / ratio] * 3


def _stability(pairs: list[tuple[list[float], list[float]]]) -> tuple[Record, dict]:
    """The check on a fresh record, and the timing part as timing_phase builds it (a dict, typed once complete)."""
    record = Record()
    timing = record.timing.to_dict()
    stability_check(record, timing, pairs, Options.build({}))
    record.timing = part(Timing, timing)
    return record, timing


def test_the_record_says_timing_unstable_when_the_interval_is_wider_than_two_x():
    disagree = [_pair(0.5), _pair(1.0), _pair(1.9)]  # no deviant: an even spread, a t-interval far over 2x
    record, timing = _stability(disagree)
    assert record.timing.unstable is True and timing["unstable"] is True
    assert (record.timing.unstable_reason or "").startswith("timing unstable: the speedup's interval")
    assert "after 3 process pairs" in (record.timing.unstable_reason or "")
    check = record.check("timing_stable")
    assert check is not None and check.passed is False and "timing unstable" in check.detail
    result_to_json(record)  # the printed record passes the closed check
    # one pair (a long problem): its interval is its calls' precision, no check
    record, _ = _stability([_pair(1.3)])
    assert record.timing.unstable is False and record.check("timing_stable") is None


def test_one_deviant_pair_does_not_make_the_timing_unstable():
    record, _ = _stability([_pair(1.02), _pair(1.05), _pair(1.06), _pair(2.4)])
    assert record.timing.unstable is False
    check = record.check("timing_stable")
    assert check is not None and check.passed is True and "pair 4 set aside as a deviant process" in check.detail
