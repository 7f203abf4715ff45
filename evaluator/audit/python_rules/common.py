"""Shared pieces of the AST rules: the Rule type and the Finding builder."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from evaluator.audit.findings import Finding
from evaluator.audit.python_facts import (
    PythonFacts,
)
from evaluator.audit.source import KernelSource

Rule = Callable[[KernelSource, PythonFacts], list[Finding]]


def _f(
    rule: str,
    severity: str,
    verdict: str,
    classes: str,
    why: str,
    src: KernelSource,
    node: ast.AST | None,
    **extra: object,
) -> Finding:
    lines, quote = src.quote_node(node) if node is not None else ((), "")
    return Finding(
        rule=rule,
        severity=severity,
        verdict=verdict,
        classes=tuple(classes.split(",")),
        why=why,
        lines=lines[:1] if quote else lines,
        quote=quote,
        extra=dict(extra),
    )


def _walk_runtime(facts: PythonFacts) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.AST]]:
    for fn in facts.runtime_functions:
        for node in ast.walk(fn):
            yield fn, node
