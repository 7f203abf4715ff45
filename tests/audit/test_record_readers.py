"""Readers of the result record read keys its writers write: every key the runtime audit and the kernel inspector
look up is a field of the record type (evaluator/harness/record.py), and every check name the audit maps is one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evaluator.audit import runtime_signals
from evaluator.harness.record import KNOWN_CHECKS, Record

REPO = Path(__file__).resolve().parents[2]
RECORD_KEYS = Record.all_keys()


def _looked_up(path: Path, functions: set[str] | None = None) -> set[str]:
    """String keys read with .get("...") or ["..."] in `path` (only inside `functions` when given)."""
    tree = ast.parse(path.read_text())
    scopes = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and (functions is None or n.name in functions)
    ]
    keys = set()
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get" and node.args:
                arg = node.args[0]
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                arg = node.slice
            else:
                continue
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                keys.add(arg.value)
    return keys


def test_every_key_the_runtime_audit_reads_is_a_record_field():
    keys = _looked_up(REPO / "evaluator" / "audit" / "runtime_signals.py")
    assert {"speed_of_light", "bound_ms", "median_ms", "custom_launched"} <= keys
    assert keys <= RECORD_KEYS, sorted(keys - RECORD_KEYS)


def test_the_runtime_audit_maps_exactly_the_check_names_of_the_record_type():
    mapped = set(runtime_signals.CHECK_SIGNALS)
    assert mapped <= KNOWN_CHECKS, sorted(mapped - KNOWN_CHECKS)
    assert KNOWN_CHECKS <= mapped | runtime_signals.NOT_SIGNALS, sorted(KNOWN_CHECKS - mapped)


def test_every_record_key_the_inspector_reads_is_a_record_field():
    """The inspector reads the record typed (Record.from_stored) and turns no part back into a dict to look keys up
    in; it reads nothing out of the record's `extra` (keys no writer names)."""
    path = REPO / "inspector" / "selectors.py"
    readers = {"_timing_extra", "_distribution_rows", "_timed_outputs_row", "_side_by_side", "kernel_inspection"}
    assert _looked_up(path, readers) == set()
    tree = ast.parse(path.read_text())
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    read_off_result = {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and getattr(n.value, "id", None) == "result"
    }
    assert "extra" not in read_off_result and "speedup_ci" in attributes
    assert read_off_result <= set(Record.keys()) | {"to_dict", "check"}, read_off_result - set(Record.keys())


def test_every_record_field_the_inspector_page_names_exists():
    """A template reads a missing attribute as "" without a word: each `i.result.<part>.<field>` the page names, and
    each field read off a name bound to one (`{% with s=i.result.speed_of_light %}` ... `s.fraction`), is a field of
    the record type."""
    text = (REPO / "templates" / "inspector" / "kernel_detail.html").read_text()
    chains = re.findall(r"\bi\.result\.([\w.]+)", text)
    aliases = dict(re.findall(r"\b(\w+)=i\.result\.([\w.]+)", text))
    named = {name for chain in chains for name in chain.split(".")}
    named |= {field for alias in aliases for field in re.findall(rf"(?<![\w.]){alias}\.(\w+)", text)}
    assert {"speed_of_light", "fraction", "unstable_reason", "sandbox", "baseline_peak_bytes"} <= named
    assert named <= RECORD_KEYS | {"faster_than_light"}, sorted(named - RECORD_KEYS)
