"""A record filled field by field (as the harness fills one) is written with an assigned null, in the order a dict
filled key by key would have."""

from __future__ import annotations

from evaluator.harness.protocol import Record, Timing, part
from evaluator.harness.record import Distribution, SpeedOfLight


def test_an_assigned_optional_field_is_written_in_the_order_it_was_assigned_null_included():
    record = Record()
    record.timed_outputs = Distribution(name="timed outputs")
    record.speed_of_light = None
    record.put("seeds_master", "0" * 64)
    assert list(record.to_dict())[-3:] == ["timed_outputs", "speed_of_light", "seeds_master"]
    assert record.to_dict()["speed_of_light"] is None
    dist = record.distributions[0]
    dist.atol, dist.rtol, dist.elements = 1e-4, 1e-4, None
    dist.worst_ratio = 0.5
    assert list(dist.to_dict())[-4:] == ["atol", "rtol", "elements", "worst_ratio"]
    assert "speed_of_light" not in Record().to_dict()  # never assigned: not written, as before
    # a part parsed from the dict the harness built keeps that dict's order (the timing part, timing_phase.py)
    timing = {**Timing().to_dict(), "order": "ABAB", "flags": {}, "precision": {"met": None}}
    assert list(part(Timing, timing).to_dict()) == list(timing)
    assert SpeedOfLight.from_dict({"flops": 1, "bytes": 2, "bound_ms": None, "fraction": None}).fraction is None


def test_set_check_sets_a_listed_check_in_place_appends_another_and_refuses_an_unknown_name():
    record = Record()
    record.set_check("determinism", False, "two outputs differ")
    record.set_check("timing_stable", True, "3 process pairs agree")
    assert record.check("determinism") == record.checks[7] and record.checks[7].passed is False
    assert record.checks[-1].name == "timing_stable" and record.check("fresh_input_timing") is None
    try:
        record.set_check("stream_sync", False, "")  # type: ignore[arg-type]
    except ValueError as exc:
        assert "not a check name" in str(exc)
    else:
        raise AssertionError("an unknown check name was accepted")
