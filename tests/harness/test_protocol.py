"""The result record: required keys, validation, JSON round trip, options."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from evaluator.harness.protocol import (
    CHECK_NAMES,
    REQUIRED_KEYS,
    SCHEMA_VERSION,
    Check,
    Distribution,
    Options,
    Record,
    TimingSide,
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


def _stored_harness_records() -> list[dict]:
    """Records the harness wrote on an H200 (benchmarks/results), stored before schema_version existed."""
    root = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    records = []
    for path in sorted(root.glob("harness-*.json")):
        data = json.loads(path.read_text())
        records += data["compile"] + data["runs"]
    return records


def test_stored_records_without_a_version_load_and_round_trip_losslessly():
    records = _stored_harness_records()
    assert records and all("schema_version" not in r for r in records)
    for stored in records:
        record = Record.from_json(json.dumps(stored))
        assert record.schema_version == SCHEMA_VERSION
        assert record.to_dict() == {**stored, "schema_version": SCHEMA_VERSION}  # extra keys kept, in place
        assert Record.from_stored(stored) == record


def test_the_record_type_is_the_one_list_of_fields():
    assert Record().to_dict() == empty_result()
    optional = ("schema_version", "speed_of_light", "launched_kernels", "timed_outputs")  # later schemas': optional
    assert REQUIRED_KEYS == tuple(k for k in Record.keys() if k not in optional)
    assert validate_result(empty_result()) == Record()
    built = Record(
        status="timeout", correct=False, error="late", checks=[Check(name="thread_count", passed=True, detail="")]
    )
    assert Record.from_json(built.to_json()) == built


def test_schema_versions():
    with pytest.raises(ValueError, match="newer"):
        Record.from_dict({**empty_result(), "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(ValueError):
        Record.from_dict({**empty_result(), "schema_version": "1"})


@pytest.mark.parametrize(
    "stored",
    [
        None,
        {},
        {"status": "timeout", "correct": False, "distributions": [], "checks": [], "error": "soft limit"},
        {"status": "ok", "timing": None, "distributions": [{"name": "D1", "passed": True}, "junk"], "memory": 3},
    ],
)
def test_stored_records_of_older_shapes_read_without_raising(stored):
    record = Record.from_stored(stored)
    assert isinstance(record.timing.candidate, TimingSide) and record.memory.candidate_peak_bytes is None
    assert all(isinstance(d, Distribution) for d in record.distributions)
    if stored and "distributions" in stored:
        assert [d.name for d in record.distributions] == [d["name"] for d in stored["distributions"][:1]]
