"""Data-flow approximation of forward: which locals alias inputs, hold constants or hold tensors."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from evaluator.audit.python_facts import (
    CONSTANT_CONSTRUCTORS,
    METADATA_ATTRS,
    PASSTHROUGH_METHODS,
    PythonFacts,
    call_name,
    dotted,
    function_params,
    root_name,
)


class _FlowState:
    """Which local names alias an input, hold a constant tensor, or hold a tensor at all (linear approximation)."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, facts: PythonFacts) -> None:
        self.facts = facts
        self.inputs = set(function_params(fn))
        self.alias = set(self.inputs)
        self.constant: dict[str, ast.AST] = {}
        self.tensor = set(self.inputs)
        loads: dict[str, int] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                loads[node.id] = loads.get(node.id, 0) + 1
        self.loads = loads
        for stmt in _statements_in_order(fn.body):
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    self._bind(target, stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self._bind(stmt.target, stmt.value)

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._bind(elt, ast.Constant(value=None) if not self.is_tensorish(value) else value)
            return
        if not isinstance(target, ast.Name):
            return
        name = target.id
        self.alias.discard(name)
        self.constant.pop(name, None)
        self.tensor.discard(name)
        if self.is_passthrough(value):
            self.alias.add(name)
        if self.is_constant_tensor(value):
            self.constant[name] = value
        if self.is_tensorish(value):
            self.tensor.add(name)

    def is_passthrough(self, node: ast.AST) -> bool:
        """The expression is an input, a view of one, or a copy of its values."""
        if isinstance(node, ast.Name):
            return node.id in self.alias
        if isinstance(node, ast.Subscript):
            return self.is_passthrough(node.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PASSTHROUGH_METHODS
            and not (node.func.attr == "to" and _has_dtype_arg(node))
        ):
            return self.is_passthrough(node.func.value)
        if isinstance(node, ast.Call) and dotted(node.func) in {"torch.clone", "torch.as_strided", "torch.reshape"}:
            return bool(node.args) and self.is_passthrough(node.args[0])
        return False

    def is_constant_tensor(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and call_name(node) in CONSTANT_CONSTRUCTORS:
            root = root_name(node.func)
            # torch.zeros(...), x.new_zeros(...), torch.zeros_like(x): constructors, not kernel output.
            return root in {"torch", "np", "numpy"} or call_name(node).startswith("new_") or root in self.tensor
        return False

    def is_tensorish(self, node: ast.AST) -> bool:
        """The value may be a tensor with data (not shape metadata)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr in METADATA_ATTRS:
                continue
            if isinstance(sub, ast.Call) and (
                self.facts.is_kernel_call(sub) or root_name(sub.func) == "torch" or root_name(sub.func) == "F"
            ):
                return True
        names = _data_names(node)
        return bool(names & self.tensor)


def _has_dtype_arg(call: ast.Call) -> bool:
    return any(
        "float16" in ast.unparse(a) or "bfloat16" in ast.unparse(a) or "half" in ast.unparse(a)
        for a in [*call.args, *(k.value for k in call.keywords)]
    )


def _data_names(node: ast.AST) -> set[str]:
    """Names read for their values (x in x + 1, but not in x.shape[0])."""
    names: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Attribute) and n.attr in METADATA_ATTRS:
            return
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in METADATA_ATTRS:
            return
        if isinstance(n, ast.Name):
            names.add(n.id)
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return names


def _statements_in_order(body: Sequence[ast.stmt | ast.excepthandler]) -> Iterator[ast.stmt | ast.excepthandler]:
    for stmt in body:
        yield stmt
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field_name, None)
            if isinstance(inner, list):
                yield from _statements_in_order([s for s in inner if isinstance(s, ast.stmt | ast.excepthandler)])
        if isinstance(stmt, ast.ExceptHandler):
            yield from _statements_in_order(stmt.body)


def _returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    return [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]


def _returned_exprs(ret: ast.Return) -> list[ast.expr]:
    value = ret.value
    if value is None:  # (not from _returns, which keeps only returns with a value)
        return []
    return list(value.elts) if isinstance(value, ast.Tuple) else [value]
