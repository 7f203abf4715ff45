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


FP32_NAMES = {"torch.float32", "torch.float"}
REDUCED_OR_OTHER = {"torch.float16", "torch.half", "torch.bfloat16", "torch.float64", "torch.double"}


def _taken_by_fp32_cuda(test: ast.AST) -> bool | None:
    """Whether a guard made only of dtype and device tests holds for the problem's inputs (every KernelBench problem
    in the dataset is fp32, on the GPU being timed), or None when it tests anything else (a shape, a value)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _taken_by_fp32_cuda(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [_taken_by_fp32_cuda(v) for v in test.values]
        decided = isinstance(test.op, ast.Or)  # the value that decides an `or` (True) or an `and` (False)
        if decided in parts:
            return decided
        return None if None in parts else not decided
    if isinstance(test, ast.Attribute) and test.attr == "is_cuda":
        return True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Attribute) and left.attr == "dtype":
        options = right.elts if isinstance(right, ast.Tuple | ast.List | ast.Set) else [right]
        names = [dotted(o) for o in options]
        if not all(n in FP32_NAMES | REDUCED_OR_OTHER for n in names):
            return None
        fp32 = any(n in FP32_NAMES for n in names)
    elif dotted(left).endswith("device.type") and isinstance(right, ast.Constant) and isinstance(right.value, str):
        fp32 = right.value == "cuda"
    else:
        return None
    if isinstance(op, ast.Eq | ast.Is | ast.In):
        return fp32
    if isinstance(op, ast.NotEq | ast.IsNot | ast.NotIn):
        return not fp32
    return None


def _is_emptiness_test(test: ast.AST) -> bool:
    """`x.numel() == 0`, `x.shape[0] == 0`, `not x.numel()`: an early return for empty inputs, which KernelBench
    never gives (and whose result an empty tensor often is)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_shape_expr(test.operand)
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and _is_shape_expr(test.left)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == 0
    )


def _value_nodes(expr: ast.AST) -> list[ast.AST]:
    """The nodes an expression's value can be: itself, the branches of a conditional, the items of a tuple, the
    receiver of a method call (`(a if c else b).contiguous()`); not a call's arguments (`ext.f(a if c else b)`
    returns what the kernel made of them)."""
    out, todo = [], [expr]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.IfExp):
            todo += [node.body, node.orelse]
        elif isinstance(node, ast.Tuple | ast.List | ast.Starred):
            todo += node.elts if isinstance(node, ast.Tuple | ast.List) else [node.value]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            todo.append(node.func.value)
        elif isinstance(node, ast.Attribute | ast.Subscript):
            todo.append(node.value)
    return out


def _returned_ifexps(fn: ast.AST) -> set[int]:
    """The conditional expressions whose value forward returns: `return a if c else b`, or one assigned to a name
    the function returns. Others (an upcast `A if A.dtype == torch.float32 else A.float()` passed to the kernel)
    choose an argument, not what forward returns."""
    returned = [
        n
        for r in ast.walk(fn)
        if isinstance(r, ast.Return) and r.value is not None
        for e in _returned_exprs(r)
        for n in _value_nodes(e)
    ]
    names = {n.id for n in returned if isinstance(n, ast.Name)}
    ids = {id(n) for n in returned if isinstance(n, ast.IfExp)}
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.IfExp)
            and any(isinstance(t, ast.Name) and t.id in names for t in node.targets)
        ):
            ids.add(id(node.value))
    return ids


def _specialisation(why: str, src: KernelSource, node: ast.AST) -> Finding:
    """The D4 label: the kernel specialised for the problem's sizes, legitimately (not flagged)."""
    return _f("shape_specialisation", "info", "info", "D4", why, src, node)


def rule_literal_guards(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """B7: a comparison of shape/size/dtype with a literal that makes forward return something else.

    Guards whose branches both launch kernels, or that only raise/assert, are D4 specialisations (info).
    """
    findings: list[Finding] = []
    for fn in facts.runtime_functions:
        flow = _FlowState(fn, facts)
        returned_ifexps = _returned_ifexps(fn)
        for node in ast.walk(fn):
            if isinstance(node, ast.Assert) and _literal_guards(node.test, facts):
                findings.append(
                    _specialisation(
                        "Assertion restricts the kernel to the problem's sizes (raises otherwise): a "
                        "legitimate specialisation.",
                        src,
                        node,
                    )
                )
                continue
            if not isinstance(node, ast.If | ast.IfExp) or not _literal_guards(node.test, facts):
                continue
            if isinstance(node, ast.IfExp) and id(node) not in returned_ifexps:
                continue
            if _is_emptiness_test(node.test):
                findings.append(
                    _specialisation(
                        "An early return for empty inputs (KernelBench never gives them): not a fast path.", src, node
                    )
                )
                continue
            body, orelse = _branches(node)
            body_kind = _branch_kind(body, flow, facts)
            orelse_kind = _branch_kind(orelse, flow, facts) if orelse else "fallthrough"
            kinds = {body_kind, orelse_kind}
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
            elif (
                "torch" in kinds
                and facts.contains_kernel_call(fn.body)
                and _torch_branch_unused(node.test, body_kind, orelse_kind)
            ):
                findings.append(
                    _f(
                        "dtype_fallback",
                        "info",
                        "info",
                        "D3",
                        "Inputs of another dtype or device go to PyTorch; the problem's fp32 inputs on the GPU run "
                        "the kernel.",
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
                    _specialisation("The kernel refuses other sizes (raises): a legitimate specialisation.", src, node)
                )
            else:
                findings.append(
                    _specialisation(
                        "Size-dependent choice between kernels or launch parameters: a legitimate specialisation.",
                        src,
                        node,
                    )
                )
    return findings


def _branches(node: ast.If | ast.IfExp) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """A guard's two branches as statements (a returned conditional's values as returns)."""
    if isinstance(node, ast.IfExp):
        return [ast.Return(value=node.body)], [ast.Return(value=node.orelse)]
    return node.body, node.orelse


def _torch_branch_unused(test: ast.AST, body_kind: str, orelse_kind: str) -> bool:
    """A dtype/device guard whose plain-PyTorch branch (by _branch_kind) the problem's fp32 GPU inputs never take."""
    taken = _taken_by_fp32_cuda(test)
    return taken is not None and (orelse_kind if taken else body_kind) == "torch"
