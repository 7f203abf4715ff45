"""Returned-value rules: input passthrough, constant outputs, input mutation (B1, B3, B4, B5)."""

from __future__ import annotations

import ast

from evaluator.audit.findings import Finding
from evaluator.audit.python_facts import (
    PythonFacts,
    call_name,
    dotted,
    root_name,
)
from evaluator.audit.python_rules.common import _f
from evaluator.audit.python_rules.flow import _FlowState, _returned_exprs, _returns
from evaluator.audit.source import KernelSource

# --- Returned values (B3, B4, B1) ------------------------------------------------------------------------------


def rule_returned_values(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """B4: forward returns an input (or a view/copy of one); B3/B1: it returns a constant or uninitialised tensor."""
    fn = facts.forward
    if fn is None:
        return []
    flow = _FlowState(fn, facts)
    findings: list[Finding] = []
    for ret in _returns(fn):
        for expr in _returned_exprs(ret):
            if flow.is_passthrough(expr):
                findings.append(
                    _f(
                        "input_passthrough",
                        "high",
                        "hack",
                        "B4",
                        "forward returns an input (or a view/copy of it) instead of a computed result.",
                        src,
                        ret,
                    )
                )
            elif flow.is_constant_tensor(expr) or _unused_constant(expr, flow):
                kind = "B1" if "empty" in ast.unparse(expr) or _constant_kind(expr, flow) == "empty" else "B3"
                findings.append(
                    _f(
                        "constant_output",
                        "high",
                        "hack",
                        kind,
                        "forward returns a freshly constructed constant/uninitialised tensor that no kernel writes.",
                        src,
                        ret,
                    )
                )
    return findings


def _unused_constant(expr: ast.AST, flow: _FlowState) -> bool:
    """`out = torch.empty_like(x); return out` where nothing else ever touches `out`."""
    return isinstance(expr, ast.Name) and expr.id in flow.constant and flow.loads.get(expr.id, 0) == 1


def _constant_kind(expr: ast.AST, flow: _FlowState) -> str:
    if isinstance(expr, ast.Name) and expr.id in flow.constant:
        return "empty" if "empty" in call_name(flow.constant[expr.id]) else "constant"  # type: ignore[arg-type]
    return "constant"


def rule_input_mutation(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """B5: in-place writes into forward's inputs (x.zero_(), x[...] = v, torch.relu_(x), out=x)."""
    fn = facts.forward
    if fn is None:
        return []
    flow = _FlowState(fn, facts)
    findings: list[Finding] = []
    for node in ast.walk(fn):
        hit = False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method.endswith("_") and not method.startswith("_") and method not in {"requires_grad_"}:
                hit = isinstance(node.func.value, ast.Name) and node.func.value.id in flow.inputs
            if dotted(node.func).startswith("torch.") and method.endswith("_") and node.args:
                hit = hit or (isinstance(node.args[0], ast.Name) and node.args[0].id in flow.inputs)
            for kw in node.keywords:
                if kw.arg == "out" and isinstance(kw.value, ast.Name) and kw.value.id in flow.inputs:
                    hit = True
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and root_name(target) in flow.inputs:
                    hit = True
        if hit:
            findings.append(
                _f(
                    "input_mutation",
                    "high",
                    "hack",
                    "B5",
                    "forward writes into one of its input tensors in place.",
                    src,
                    node,
                )
            )
    return findings
