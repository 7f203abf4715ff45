"""The harness fills a typed `Record` (Context.record) and turns it into JSON only where it prints it: the printed
record has the keys, in the order, it had when the harness filled a plain dict, and an assigned null stays."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest

from evaluator.harness.orchestrator.clients import Deadline
from evaluator.harness.orchestrator.context import Context
from evaluator.harness.orchestrator.verdict import environment, verdict
from evaluator.harness.protocol import Options, Record, Spec, Timing, part, result_to_json
from evaluator.harness.record import Distribution, Environment, SpeedOfLight

FIXTURE = Path(__file__).resolve().parent / "data" / "record_keys_cpu.json"
# Keys a record holds only on some runs of the same evaluation (several process pairs on a loaded machine).
CONDITIONAL = {"timing.pairs[].set_aside", "timing.unstable_reason"}


def part_keys(data: dict[str, Any], kind: type = Record, prefix: str = "") -> list[str]:
    """Every key of the record's parts, in order, a list's items merged (not inside free-form mappings)."""
    out: list[str] = []
    for key, value in data.items():
        out.append(prefix + key)
        nested = kind._nested.get(key)
        if nested is None or value is None:
            continue
        cls, many = nested
        for item in value if many else [value]:
            out += [k for k in part_keys(item, cls, f"{prefix}{key}{'[]' if many else ''}.") if k not in out]
    return out


def _context() -> Context:
    spec = Spec(problem_path="p.py", kernel_path="k.py")
    # the workers and folders are not used by the verdict and environment phases
    return Context(
        spec=spec,
        opts=Options.build({"quick": True}),
        emit=lambda event: None,
        record=Record(),
        deadline=Deadline(60.0),
        folders=None,  # type: ignore[arg-type]
        workers=None,  # type: ignore[arg-type]
    )


def test_context_record_is_a_record_after_the_verdict_and_environment_phases():
    assert typing.get_type_hints(Context)["record"] is Record
    ctx = _context()
    for dist in ctx.record.distributions:
        dist.passed = True
    ctx.record.correct = ctx.record.standard_correct = True
    verdict(ctx)
    environment(ctx)
    assert isinstance(ctx.record, Record)
    assert ctx.record.status == "ok" and ctx.record.check("output_no_alias") == ctx.record.checks[1]
    assert isinstance(ctx.record.environment, Environment) and ctx.record.environment.device == "cpu"
    printed = json.loads(result_to_json(ctx.record))
    # nulls the phases assigned are written (no CUDA here), the master seed travels last, beside the record
    assert printed["environment"]["cudnn"] is None and printed["environment"]["precision_flags"] is None
    assert list(printed)[-1] == "seeds_master" and printed["seeds_master"] == ctx.master_seed


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


@pytest.mark.parametrize("case", json.loads(FIXTURE.read_text())["cases"], ids=lambda case: case["kernel"])
def test_the_printed_record_of_a_cpu_evaluation_has_the_keys_it_had_as_a_dict(evaluate, case):
    record = evaluate(case["problem"], case["kernel"])
    assert record["status"] == case["status"], record["error"]
    got = [k for k in part_keys(record) if k not in CONDITIONAL]
    assert got == [k for k in case["keys"] if k not in CONDITIONAL]


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
