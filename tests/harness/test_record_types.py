"""The record's closed vocabulary: check names and keys the harness may write, checked where it prints the record;
stored records of every age still load."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import pytest

from evaluator.harness import __main__ as harness_main
from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.protocol import (
    CHECK_NAMES,
    KNOWN_CHECKS,
    Check,
    InvalidRecord,
    Record,
    Spec,
    empty_result,
    result_to_json,
)
from evaluator.harness.record import PHASE_COUNTERS, PHASE_NAMES, PHASE_PATTERN

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "evaluator" / "harness"


def _walk_records(value: Any, out: list[dict]) -> None:
    if isinstance(value, dict):
        if {"checks", "distributions", "timing"} <= set(value):
            out.append(value)
        for item in value.values():
            _walk_records(item, out)
    elif isinstance(value, list):
        for item in value:
            _walk_records(item, out)


def _stored_records() -> list[tuple[str, dict]]:
    """Every record the harness wrote on an H200 that the repository keeps (benchmarks/results, the GPU fixture)."""
    found = []
    paths = sorted((REPO / "benchmarks" / "results").rglob("*.json")) + [REPO / "leaderboard/fixtures/h200_e2e.json"]
    for path in paths:
        records: list[dict] = []
        _walk_records(json.loads(path.read_text()), records)
        found += [(str(path.relative_to(REPO)), r) for r in records]
    return found


def test_set_check_refuses_a_name_outside_the_closed_set():
    record = Record()
    with pytest.raises(ValueError, match="not a check name"):
        record.set_check("stream_sync", False, "")  # type: ignore[arg-type]
    record.set_check("process_containment", False, "2 processes outlived the worker")
    record.set_check("determinism", True, "same output twice")  # a listed check is set in place
    assert record.check("determinism") == Check(name="determinism", passed=True, detail="same output twice")
    assert len(record.checks) == len(CHECK_NAMES) + 1
    assert record.to_dict()["checks"][-1] == {
        "name": "process_containment",
        "passed": False,
        "detail": "2 processes outlived the worker",
    }


def test_a_record_with_an_unknown_check_name_is_refused_but_an_old_stored_one_still_reads():
    record = empty_result()
    record["checks"].append({"name": "roofline_sanity", "passed": True, "detail": ""})
    with pytest.raises(ValueError, match="roofline_sanity"):
        Record.from_dict(record)
    with pytest.raises(InvalidRecord, match="roofline_sanity"):
        result_to_json(record)
    assert Record.from_stored(record).checks[-1].name == "roofline_sanity"  # pages still show it


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r["timing"].update(sol_ms=1.0),  # a key record.py does not name
        lambda r: r.update(roofline={"bound_ms": 1.0}),
        lambda r: r["phases"].update(timnig=0.5),  # a phase name with a typo
        lambda r: r["timing"].update(unstable="yes"),  # a named key of the wrong type
        lambda r: r.pop("environment"),
    ],
)
def test_an_invalid_record_at_print_time_raises_an_infrastructure_error(mutate):
    record = empty_result()
    mutate(record)
    with pytest.raises(HarnessInfraError, match="harness bug"):
        result_to_json(record)


def test_a_record_the_harness_may_print_passes():
    record = empty_result()
    record["timing"].update(unstable=True, unstable_reason="spread", pairs=[{"pair": 1, "speedup": 1.2, "calls": 9}])
    record["phases"].update(pair_2_start=1.5, timing_loop_pair_2=3.0, pair_starts_under_exclusive_lock=0)
    record["seeds_master"] = "0" * 64  # travels beside the record, to the site only
    assert json.loads(result_to_json(record))["timing"]["pairs"][0]["speedup"] == 1.2


def test_the_channel_reports_an_invalid_record_as_an_infrastructure_error_and_prints_no_record(monkeypatch, tmp_path):
    bad = empty_result()
    bad["timing"]["roofline_ms"] = 0.1
    monkeypatch.setattr(harness_main, "make_undumpable", lambda: None)
    monkeypatch.setattr(harness_main, "evaluate", lambda spec, emit, ready: bad)
    spec = tmp_path / "spec.json"
    spec.write_text(Spec(problem_path="p.py", kernel_path="k.py").to_json())
    read, write = os.pipe()
    code = harness_main._channel_main(str(spec), write)
    with os.fdopen(read) as channel:
        events = [json.loads(line) for line in channel.read().splitlines()]
    assert code == 3
    assert [e["event"] for e in events] == ["infra_error"] and "roofline_ms" in events[0]["message"]


def test_every_check_name_and_phase_the_harness_writes_is_named_in_the_record_type():
    """set_check/get_check/check with a literal of CheckName only (the name: the first argument of the record's
    methods, the second of protocol.get_check); ctx.phase with a phase record.py names."""
    checks, phases = [], []
    for path in HARNESS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            method = isinstance(node.func, ast.Attribute)
            on_record = method and ast.unparse(node.func).endswith("record.check")
            if (name in ("set_check", "get_check") or on_record) and len(node.args) >= 1 + (not method):
                arg = node.args[0 if method else 1]
                assert isinstance(arg, ast.Constant), f"{path.name}:{node.lineno}: check name not a literal"
                checks.append(arg.value)
            if name == "phase" and node.args and isinstance(node.args[0], ast.Constant):
                phases.append(node.args[0].value)
    assert checks and set(checks) <= KNOWN_CHECKS, set(checks) - KNOWN_CHECKS
    assert phases and set(phases) <= PHASE_NAMES, set(phases) - PHASE_NAMES
    assert PHASE_PATTERN.fullmatch("pair_3_start") and PHASE_PATTERN.fullmatch("timing_loop_pair_3")


def test_every_key_the_orchestrator_writes_into_the_record_is_a_field_of_the_record_type():
    """Statically, so a key written only on a GPU path (the CPU tests never reach it) fails here, not on the H200:
    record[...] = ..., part.update(key=...) and part.setdefault("key") in the orchestrator (its own flag tables
    aside: Context.flags and flag_details are not the record)."""
    names = Record.all_keys() | PHASE_NAMES | PHASE_COUNTERS
    written = set()
    for path in (HARNESS / "orchestrator").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                target, keys = node.value, [node.slice]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("update", "setdefault"):
                target = node.func.value
                keys = [ast.Constant(kw.arg) for kw in node.keywords if kw.arg] + node.args[:1]
            else:
                continue
            if ast.unparse(target).endswith(("flags", "flag_details")):
                continue
            written |= {(path.name, k.value) for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    # the record's own fields and parts are attributes now (mypy checks those); the timing part is still a dict
    assert {key for _, key in written} >= {"ci_method", "unstable_reason", "pair_starts", "compile_import"}
    assert not {(where, key) for where, key in written if key not in names}


# Functions whose every dict literal is a part of the record (launched kernels and the roofline bound are written on
# CUDA only, where the CPU tests never print a record).
RECORD_BUILDERS = {
    "timing_record.py": None,
    "timed_outputs.py": None,
    "roofline.py": {"speed_of_light"},
    "launched.py": {"summarise", "report"},
    "verdict.py": {"environment"},
}


def test_every_key_of_the_record_parts_the_orchestrator_builds_is_a_field_of_the_record_type():
    names = Record.all_keys()
    built = set()
    for file, functions in RECORD_BUILDERS.items():
        tree = ast.parse((HARNESS / "orchestrator" / file).read_text())
        scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in (functions or {n.name})]
        assert scopes, file
        for scope in scopes:
            for node in ast.walk(scope):
                if isinstance(node, ast.Dict):
                    keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                    built |= {(file, key) for key in keys}
    assert {key for _, key in built} >= {"bound_ms", "custom_launched", "time_us", "candidate_synced_median_ms"}
    assert not {(file, key) for file, key in built if key not in names}


def test_every_key_in_the_records_written_on_the_gpu_is_a_field_of_the_record_type():
    """The H200 records of schema 2 pass the print-time check (keys starting with "_" are the benchmark scripts')."""
    recent = [(where, r) for where, r in _stored_records() if r.get("schema_version") == 2]
    assert len(recent) >= 20
    for where, stored in recent:
        record = {k: v for k, v in stored.items() if not k.startswith("_")}
        try:
            Record.from_dict(record, closed=True)
        except ValueError as exc:
            pytest.fail(f"{where}: {exc}")


def test_stored_records_of_every_age_load_and_round_trip_losslessly():
    records = _stored_records()
    assert {r.get("schema_version") for _, r in records} >= {None, 1, 2}
    for where, stored in records:
        record = Record.from_dict(stored)
        assert record.to_dict() == {**stored, "schema_version": record.schema_version}, where
        assert Record.from_stored(stored) == record
