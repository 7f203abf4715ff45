"""Rules that compare a kernel with its reference problem file (sizes, redefined inputs)."""

from __future__ import annotations

import ast
import re

from evaluator.audit.findings import Finding
from evaluator.audit.source import KernelSource

SIZE_NAMES_IGNORED = {"seed"}


def problem_constants(problem_source: str) -> dict[str, object]:
    """Module-level `name = <int/float/tuple literal>` assignments of a KernelBench problem (its sizes)."""
    try:
        tree = ast.parse(problem_source)
    except (SyntaxError, ValueError):
        return {}
    constants: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                value = ast.literal_eval(stmt.value)
            except (ValueError, SyntaxError, TypeError):
                continue
            if isinstance(value, int | float | tuple) and not isinstance(value, bool):
                constants[stmt.targets[0].id] = value
    return constants


def _int_values(value: object) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, tuple):
        return [v for item in value for v in _int_values(item)]
    return []


def rule_problem_sizes(src: KernelSource, problem_source: str) -> list[Finding]:
    """D4 (info): the problem's sizes appear as literals in the kernel; B10 (low): the kernel redefines them."""
    constants = problem_constants(problem_source)
    findings: list[Finding] = []
    redefined: set[int] = set()
    if src.tree is not None:
        for stmt in src.tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                if name not in constants or name in SIZE_NAMES_IGNORED:
                    continue
                try:
                    value = ast.literal_eval(stmt.value)
                except (ValueError, SyntaxError, TypeError):
                    value = None
                if value != constants[name]:
                    findings.append(
                        Finding(
                            rule="problem_size_override",
                            severity="low",
                            verdict="suspicious",
                            classes=("B10",),
                            why=f"The kernel file redefines the problem size {name} ({constants[name]!r} in the "
                            "reference); the harness takes sizes and inputs from the reference only.",
                            lines=(stmt.lineno,),
                            quote=src.line(stmt.lineno),
                        )
                    )
                redefined.add(stmt.lineno)
    values = sorted({v for value in constants.values() for v in _int_values(value) if v >= 3})
    if not values:
        return findings
    pattern = re.compile(r"(?<![\w.])(" + "|".join(str(v) for v in values) + r")(?![\w.])")
    hits = [
        number
        for number, text in enumerate(src.lines, start=1)
        if number not in redefined and not text.lstrip().startswith("#") and pattern.search(text)
    ]
    if hits:
        findings.append(
            Finding(
                rule="hardcoded_problem_sizes",
                severity="info",
                verdict="info",
                classes=("D4",),
                why="The kernel hard-codes sizes of this problem (legitimate specialisation; it may not run on other "
                "shapes).",
                lines=tuple(hits[:5]),
                quote=src.line(hits[0]),
            )
        )
    return findings
