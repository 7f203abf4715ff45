"""The result record: required keys, validation, JSON round trip, options."""

from __future__ import annotations

import json
import math

import pytest

from evaluator.harness.protocol import (
    CHECK_NAMES,
    REQUIRED_KEYS,
    Options,
    empty_result,
    result_from_json,
    result_to_json,
    shorten,
    validate_result,
)


def test_empty_result_has_every_key_and_validates():
    record = empty_result()
    assert set(REQUIRED_KEYS) <= set(record)
    assert [c["name"] for c in record["checks"]] == list(CHECK_NAMES)
    validate_result(record)


def test_round_trip_turns_non_finite_numbers_into_null():
    record = empty_result()
    record["speedup"] = math.inf
    record["distributions"][0]["max_abs_error"] = math.nan
    text = result_to_json(record)
    assert "\n" not in text
    back = result_from_json(text)
    assert back["speedup"] is None and back["distributions"][0]["max_abs_error"] is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r.pop("checks"),
        lambda r: r.update(status="passed"),
        lambda r: r.update(correct="yes"),
        lambda r: r.update(speedup_ci=[1.0]),
        lambda r: r["distributions"].pop(),
        lambda r: r["timing"].pop("candidate"),
    ],
)
def test_validate_rejects_malformed_records(mutate):
    record = empty_result()
    mutate(record)
    with pytest.raises(ValueError):
        validate_result(json.loads(json.dumps(record)))


def test_options_quick_presets_and_unknown_keys():
    assert Options.build().min_calls == 100 and Options.build().standard_trials == 5
    quick = Options.build({"quick": True, "min_calls": 7})
    assert quick.min_calls == 7 and quick.verified_trials >= 2
    with pytest.raises(ValueError):
        Options.build({"quikc": True})
    with pytest.raises(ValueError):
        Options.build({"verified_trials": 1})


def test_shorten_keeps_head_and_tail():
    text = "HEAD" + "x" * 10_000 + "TAIL"
    short = shorten(text, 200)
    assert len(short) < 300 and short.startswith("HEAD") and short.endswith("TAIL")
