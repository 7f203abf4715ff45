"""The normalised syntax tree of a kernel source: what a fingerprint hashes when the source parses.

What is dropped or made canonical (each leaves what the code does unchanged):

- everything the parser drops: comments, formatting, brackets, trailing commas, quote style, the spelling of a
  number (`0.0`, `0.00` and `0e0` are one float; `1` and `1.0` stay apart: an int is not a float);
- no-op statements: `pass`, a bare constant (docstrings, `...`, `0`), `x = x` (dropped even where `x` is not bound
  yet, where it would raise);
- the names of local variables and parameters of functions, lambdas and comprehensions, replaced by their order of
  first appearance (alpha-renaming), so a renamed local or argument is the same code. Kept as written: module-level
  names (globals, `ModelNew`), imported names, attributes, names declared `global`/`nonlocal`, function and class
  names, keyword names at call sites, and every parameter whose name a call of a function defined in the file
  passes by keyword (`helper(scale=2)`); and nothing at all is renamed in a file that can see its own names
  (`locals()`, `vars()`, `eval`, `exec`, `globals()`, `inspect`, `__code__`, `signature`...);
- C++/CUDA code in a string (a `load_inline` source): its comments and the whitespace between its tokens
  (`catalogue.fingerprint_c`).

Every walk here is iterative: the parser refuses a tree too deep for it, and nothing after it recurses.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from catalogue.fingerprint_c import looks_like_c, normalise_c

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# A file that can read its own local names (or evaluate text as code) could behave differently once renamed.
_SEEING_NAMES = {"locals", "vars", "eval", "exec", "globals", "dir", "compile", "__import__", "inspect"}
_SEEING_ATTRIBUTES = {
    "__code__",
    "co_varnames",
    "f_locals",
    "__defaults__",
    "__kwdefaults__",
    "__signature__",
    "signature",
    "getfullargspec",
    "getcallargs",
    "__wrapped__",
}


def parse_normalised(source: str) -> str | None:
    """The normalised tree of `source` as text (see the module docstring), or None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    order, where = _scopes(tree)
    if not _sees_its_names(order):
        _rename_locals(order, where)
    return _dump(tree)


def _children(node: ast.AST) -> list[ast.AST]:
    """`node`'s child nodes in field order (as `ast.iter_child_nodes`, without its generators), contexts left out."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            if not isinstance(value, ast.expr_context):
                out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, ast.AST))
    return out


def _is_no_op(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
        return isinstance(target, ast.Name) and isinstance(value, ast.Name) and target.id == value.id
    return False


def _drop_no_ops(node: ast.AST) -> None:
    """Drop the no-op statements of `node`'s own statement lists."""
    for name in ("body", "orelse", "finalbody"):
        statements = getattr(node, name, None)
        if not isinstance(statements, list) or not statements or not isinstance(statements[0], ast.stmt):
            continue
        kept = [stmt for stmt in statements if not _is_no_op(stmt)]
        if not kept and name == "body":
            kept = [ast.Pass()]  # a body cannot be empty: every no-op body is one `pass`
        setattr(node, name, kept)


def _sees_its_names(order: list[ast.AST]) -> bool:
    for node in order:
        if isinstance(node, ast.Name) and node.id in _SEEING_NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _SEEING_ATTRIBUTES:
            return True
        if isinstance(node, ast.alias) and node.name.split(".")[0] in _SEEING_NAMES:
            return True
    return False


@dataclass
class _Scope:
    """A function, lambda or comprehension (renamed), or a class or the module (never renamed)."""

    renames: bool
    parent: _Scope | None
    locals: set[str] = field(default_factory=set)
    kept: set[str] = field(default_factory=set)  # global/nonlocal declarations, imports, nested def/class names


def _keyword_names(order: list[ast.AST]) -> set[str]:
    """Names passed by keyword to a function or class defined in this file: their parameters keep their names."""
    defined = {node.name for node in order if isinstance(node, _DEFINITIONS)}
    names: set[str] = set()
    for node in order:
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        called = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else ""
        if called not in defined and called != "__init__":
            continue
        for keyword in node.keywords:
            if keyword.arg is not None:
                names.add(keyword.arg)
            elif isinstance(keyword.value, ast.Dict):  # f(**{"scale": 2})
                names.update(str(k.value) for k in keyword.value.keys if isinstance(k, ast.Constant))
    return names


def _arguments(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return found + [a for a in (args.vararg, args.kwarg) if a is not None]


def _read_outside(node: ast.AST) -> list[ast.AST]:
    """The parts of a definition or comprehension evaluated in the scope around it, not in its own."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        parts: list[ast.AST | None] = [*node.args.defaults, *node.args.kw_defaults]
        parts += [a.annotation for a in _arguments(node.args)]
        if not isinstance(node, ast.Lambda):
            parts += [*node.decorator_list, node.returns]
        return [part for part in parts if part is not None]
    if isinstance(node, ast.ClassDef):
        return [*node.bases, *node.keywords, *node.decorator_list]
    if isinstance(node, _COMPREHENSIONS):
        return [node.generators[0].iter]
    return []


def _scopes(tree: ast.AST) -> tuple[list[ast.AST], dict[int, _Scope]]:
    """Every node in source order (no-op statements dropped on the way) and the scope each is read in (by id),
    with every scope's bound names collected."""
    order: list[ast.AST] = []
    where: dict[int, _Scope] = {}
    outside: dict[int, _Scope] = {}  # nodes read in the scope around the definition that holds them
    stack: list[tuple[ast.AST, _Scope]] = [(tree, _Scope(renames=False, parent=None))]
    while stack:
        node, scope = stack.pop()
        scope = outside.get(id(node), scope)
        _drop_no_ops(node)
        order.append(node)
        where[id(node)] = scope
        inner = scope
        if isinstance(node, _FUNCTIONS):
            inner = _Scope(renames=True, parent=scope)
            inner.locals.update(a.arg for a in _arguments(node.args))
        elif isinstance(node, _COMPREHENSIONS):
            inner = _Scope(renames=True, parent=scope)
        elif isinstance(node, ast.ClassDef):
            inner = _Scope(renames=False, parent=scope)
        if isinstance(node, _FUNCTIONS + _COMPREHENSIONS + (ast.ClassDef,)):
            outside.update((id(part), scope) for part in _read_outside(node))
        _bind(node, scope)
        stack.extend((child, inner) for child in reversed(_children(node)))
    return order, where


def _bind(node: ast.AST, scope: _Scope) -> None:
    """Record the names `node` binds in `scope`."""
    if isinstance(node, ast.Global | ast.Nonlocal):
        scope.kept.update(node.names)
    elif isinstance(node, ast.alias):
        scope.kept.add((node.asname or node.name).split(".")[0])
    elif isinstance(node, _DEFINITIONS):
        scope.kept.add(node.name)
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
        scope.locals.add(node.id)
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
        scope.locals.add(node.name)
    elif isinstance(node, ast.MatchMapping) and node.rest:
        scope.locals.add(node.rest)


def _owner(name: str, scope: _Scope | None) -> _Scope | None:
    """The renamed scope whose local `name` is, or None (a global, builtin, import, class attribute or kept name).
    Python's rule: the scope itself, then the enclosing functions, skipping class bodies, then the module."""
    first = True
    while scope is not None:
        is_class = not scope.renames and scope.parent is not None
        if first or not is_class:
            if name in scope.kept:
                return None
            if name in scope.locals:
                return scope if scope.renames else None
        first = False
        scope = scope.parent
    return None


def _rename_locals(order: list[ast.AST], where: dict[int, _Scope]) -> None:
    protected = _keyword_names(order)
    numbers: dict[tuple[int, str], str] = {}

    def placeholder(name: str, scope: _Scope | None) -> str:
        owner = _owner(name, scope)
        if owner is None or name in protected:
            return name
        return numbers.setdefault((id(owner), name), f"${len(numbers)}")

    for node in order:
        scope = where.get(id(node))
        if isinstance(node, ast.Name):
            node.id = placeholder(node.id, scope)
        elif isinstance(node, _FUNCTIONS):
            inner = where.get(id(node.args))
            for arg in _arguments(node.args):
                arg.arg = placeholder(arg.arg, inner) if inner and inner.renames else arg.arg
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            node.name = placeholder(node.name, scope)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            node.rest = placeholder(node.rest, scope)


def _constant(value: object) -> str:
    if isinstance(value, str) and looks_like_c(value):
        value = normalise_c(value)
    return f"{type(value).__name__}:{value!r}"


def _dump(tree: ast.AST) -> str:
    """The tree as text, node types, fields and constants (with their type), without positions; iterative."""
    out: list[str] = []
    close = object()
    stack: list[object] = [tree]
    while stack:
        item = stack.pop()
        if item is close:
            out.append(")")
        elif isinstance(item, ast.AST):
            out.append(type(item).__name__ + "(")
            stack.append(close)
            for name in reversed(item._fields):
                value = getattr(item, name, None)
                if isinstance(item, ast.Constant) and name == "value":
                    stack.append(_constant(value))
                elif name != "kind" and name != "type_comment":
                    stack.extend((value, f"{name}="))
        elif isinstance(item, list):
            out.append("[")
            stack.append("]")
            stack.extend(reversed(item))
        elif isinstance(item, str):
            out.append(item)
        else:
            out.append(repr(item))
    return " ".join(out)
