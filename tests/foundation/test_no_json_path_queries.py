"""Queries filter and rank on columns, never on JSON paths into a stored record: what a query needs from the record is
a column of the one projection (evaluator/record_projection.py), so a reader cannot drift from what the projection
stores nor read a key the record never has.

A lookup through `result` (`result__timing__unstable`, `"result__speed_of_light__fraction"`,
`f"result__environment__{key}"`, also behind a relation: `evaluation__result__...`) anywhere in the Django side's
source fails here; `result__isnull` is a lookup on the column itself and stays allowed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("catalogue", "evaluator", "leaderboard", "inspector", "config")
SKIPPED = ("evaluator/harness/", "/migrations/", "leaderboard/demo/problems/")
PROJECTION = "evaluator/record_projection.py"  # the one module that reads the record for the columns
LOOKUP = re.compile(r"(\w+__)*result__\w*")
ALLOWED = {"result__isnull"}


def json_path_lookups(source: str) -> list[tuple[int, str]]:
    """(line, lookup) of every query lookup into `result` in the module's source: keyword arguments
    (`filter(result__x=...)`) and string constants, f-string pieces included (`values_list("result__x")`,
    `Q(**{f"result__{key}": v})`)."""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg:
            text = node.arg
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if LOOKUP.fullmatch(text) and "result__" in text and text not in ALLOWED:
            found.append((node.lineno, node.col_offset, text))
    return [(line, text) for line, _, text in sorted(found)]


def _sources() -> list[Path]:
    paths = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative != PROJECTION and not any(skip in f"/{relative}" for skip in SKIPPED):
                paths.append(path)
    return paths


def test_no_query_reads_a_json_path_of_the_record():
    paths = _sources()
    assert len(paths) > 150 and ROOT / "leaderboard" / "selectors" / "ranking_compute.py" in paths
    bad = [
        f"{path.relative_to(ROOT)}:{line} looks up {text} (make it a column of {PROJECTION})"
        for path in paths
        for line, text in json_path_lookups(path.read_text())
    ]
    assert bad == []


def test_the_rule_sees_each_form_of_a_json_path_lookup():
    # The three forms main held before the columns (eligibility, the ranking, the stacks), and one behind a relation.
    planted = """
Q(result__timing__unstable__isnull=True) | Q(result__timing__unstable=False)
rows.values_list("kernel_id", "result__speed_of_light__fraction")
q &= Q(**{f"result__environment__{key}__isnull": True})
Flag.objects.filter(evaluation__result__status="ok")
Evaluation.objects.filter(result__isnull=False)  # the column itself: allowed
'''prose that mentions result__timing__unstable is no lookup'''
"""
    assert [text for _, text in json_path_lookups(planted)] == [
        "result__timing__unstable__isnull",
        "result__timing__unstable",
        "result__speed_of_light__fraction",
        "result__environment__",
        "evaluation__result__status",
    ]
