"""Shape/size/dtype guard rules: literal guards vs legitimate specialisation (B7 vs D4)."""

from __future__ import annotations

import ast

from evaluator.audit.findings import Finding
from evaluator.audit.python_facts import (
    PythonFacts,
    call_name,
    dotted,
)
from evaluator.audit.python_rules.common import _f
from evaluator.audit.python_rules.flow import _FlowState, _returned_exprs
from evaluator.audit.source import KernelSource

# --- Shape / size / dtype guards (B7 vs D4) --------------------------------------------------------------------


def _is_shape_expr(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in {"shape", "ndim", "dtype"}:
            return True
        if isinstance(sub, ast.Call) and call_name(sub) in {"size", "numel", "dim", "len", "nelement"}:
            return True
    return False


def _is_literal(node: ast.AST, facts: PythonFacts) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return True
    if isinstance(node, ast.Tuple | ast.List):
        return bool(node.elts) and all(_is_literal(e, facts) for e in node.elts)
    if isinstance(node, ast.Call) and dotted(node.func) == "torch.Size":
        return True
    if (
        isinstance(node, ast.Attribute)
        and dotted(node).startswith("torch.")
        and node.attr
        in {
            "float32",
            "float16",
            "float",
            "half",
            "bfloat16",
            "float64",
            "double",
        }
    ):
        return True
    return isinstance(node, ast.Name) and node.id in facts.module_constants


def _literal_guards(test: ast.AST, facts: PythonFacts) -> list[ast.Compare]:
    return [
        c
        for c in ast.walk(test)
        if isinstance(c, ast.Compare)
        and any(_is_shape_expr(side) for side in [c.left, *c.comparators])
        and any(_is_literal(side, facts) for side in [c.left, *c.comparators])
    ]


def _branch_kind(body: list[ast.stmt], flow: _FlowState, facts: PythonFacts) -> str:
    """What a guarded branch does: raise, passthrough, constant, torch (no kernel), kernel, or fallthrough."""
    if body and all(isinstance(s, ast.Raise | ast.Assert) for s in body):
        return "raise"
    returns = [n for s in body for n in ast.walk(s) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return "fallthrough"
    exprs = [e for r in returns for e in _returned_exprs(r)]
    if any(flow.is_passthrough(e) for e in exprs):
        return "passthrough"
    if any(flow.is_constant_tensor(e) for e in exprs):
        return "constant"
    if facts.contains_kernel_call(list(body)):
        return "kernel"
    return "torch"


def rule_literal_guards(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """B7: a comparison of shape/size/dtype with a literal that makes forward return something else.

    Guards whose branches both launch kernels, or that only raise/assert, are D4 specialisations (info).
    """
    findings: list[Finding] = []
    for fn in facts.runtime_functions:
        flow = _FlowState(fn, facts)
        for node in ast.walk(fn):
            if isinstance(node, ast.Assert) and _literal_guards(node.test, facts):
                findings.append(
                    _f(
                        "shape_specialisation",
                        "info",
                        "info",
                        "D4",
                        "Assertion restricts the kernel to the problem's sizes (raises otherwise): a "
                        "legitimate specialisation.",
                        src,
                        node,
                    )
                )
                continue
            if not isinstance(node, ast.If | ast.IfExp) or not _literal_guards(node.test, facts):
                continue
            if isinstance(node, ast.IfExp):
                body: list[ast.stmt] = [ast.Return(value=node.body)]
                orelse: list[ast.stmt] = [ast.Return(value=node.orelse)]
            else:
                body, orelse = node.body, node.orelse
            kinds = {_branch_kind(body, flow, facts), _branch_kind(orelse, flow, facts) if orelse else "fallthrough"}
            if kinds & {"passthrough", "constant"}:
                findings.append(
                    _f(
                        "literal_shape_guard",
                        "high",
                        "hack",
                        "B7,B4",
                        "A literal shape/size/dtype test makes forward return an input or a constant "
                        "tensor instead of running the kernel.",
                        src,
                        node,
                    )
                )
            elif "torch" in kinds and facts.contains_kernel_call(fn.body):
                findings.append(
                    _f(
                        "literal_shape_guard",
                        "medium",
                        "suspicious",
                        "B7,D3",
                        "A literal shape/size/dtype test routes some inputs to plain PyTorch instead of "
                        "the custom kernel.",
                        src,
                        node,
                    )
                )
            elif "raise" in kinds:
                findings.append(
                    _f(
                        "shape_specialisation",
                        "info",
                        "info",
                        "D4",
                        "The kernel refuses other sizes (raises): a legitimate specialisation.",
                        src,
                        node,
                    )
                )
            else:
                findings.append(
                    _f(
                        "shape_specialisation",
                        "info",
                        "info",
                        "D4",
                        "Size-dependent choice between kernels or launch parameters: a legitimate specialisation.",
                        src,
                        node,
                    )
                )
    return findings
