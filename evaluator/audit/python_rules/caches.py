"""Cache and cross-call state rules: forward caches, self tensor state, pointer keys (A6)."""

from __future__ import annotations

import ast

from evaluator.audit.findings import Finding
from evaluator.audit.python_facts import (
    PythonFacts,
    call_name,
    root_name,
    self_attr,
)
from evaluator.audit.python_rules.common import _f
from evaluator.audit.python_rules.flow import _FlowState, _returned_exprs, _returns
from evaluator.audit.source import KernelSource

CONTAINER_FACTORIES = {"dict", "list", "set", "OrderedDict", "defaultdict", "WeakValueDictionary", "deque"}
CONTAINER_WRITES = {"append", "setdefault", "update", "insert", "add", "extend", "__setitem__", "appendleft"}


# --- Caches and cross-call state (A6) --------------------------------------------------------------------------


def _containers(facts: PythonFacts) -> tuple[set[str], set[str]]:
    """Module/class-level container names and self attributes initialised with a container."""
    module_level: set[str] = set()
    self_level: set[str] = set()

    def is_container(value: ast.AST) -> bool:
        if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp):
            return True
        return isinstance(value, ast.Call) and call_name(value) in CONTAINER_FACTORIES

    for stmt in facts.tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None and is_container(stmt.value):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(target, ast.Name):
                    module_level.add(target.id)
        if isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, ast.Assign) and is_container(item.value):
                    module_level.update(t.id for t in item.targets if isinstance(t, ast.Name))
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Assign) and is_container(node.value):
            for target in node.targets:
                if attr := self_attr(target):
                    self_level.add(attr)
    return module_level, self_level


def _local_names(fn: ast.AST) -> set[str]:
    """Names a function binds itself (they shadow module-level containers), minus those declared global.

    Only plain names count: `_CACHE[key] = v` writes into a module container, it does not bind `_CACHE`."""

    def bound_by(target: ast.AST) -> set[str]:
        if isinstance(target, ast.Name):
            return {target.id}
        if isinstance(target, ast.Tuple | ast.List | ast.Starred):
            elts = target.elts if not isinstance(target, ast.Starred) else [target.value]
            return {n for e in elts for n in bound_by(e)}
        return set()

    bound: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bound |= bound_by(target)
        elif isinstance(node, ast.AnnAssign | ast.For | ast.AugAssign):
            bound |= bound_by(node.target)
    declared = {name for n in ast.walk(fn) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names}
    return bound - declared


def _container_of(node: ast.AST, module_level: set[str], self_level: set[str]) -> str:
    """The container an expression reads or writes: '_CACHE' / 'self._cache' / ''."""
    base = node.value if isinstance(node, ast.Subscript) else node
    if isinstance(base, ast.Name) and base.id in module_level:
        return base.id
    if (attr := self_attr(base)) and attr in self_level:
        return f"self.{attr}"
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.attr in module_level:
        return f"{base.value.id}.{base.attr}"  # ModelNew._cache (class attribute)
    return ""


def rule_forward_caches(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """A6: containers at module/class/self level written during forward; replay when what is cached is returned."""
    module_level_all, self_level = _containers(facts)
    findings: list[Finding] = []
    for fn in facts.runtime_functions:
        flow = _FlowState(fn, facts)
        module_level = module_level_all - _local_names(fn)
        returned_names = {e.id for r in _returns(fn) for e in _returned_exprs(r) if isinstance(e, ast.Name)}
        returned_reads = any(
            _container_of(e, module_level, self_level)
            or (isinstance(e, ast.Call) and _container_read(e, module_level, self_level))
            for r in _returns(fn)
            for e in _returned_exprs(r)
        )
        read_names: set[str] = set()
        for stmt in ast.walk(fn):
            if isinstance(stmt, ast.Assign) and (
                _container_of(stmt.value, module_level, self_level)
                or (isinstance(stmt.value, ast.Call) and _container_read(stmt.value, module_level, self_level))
            ):
                read_names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        replay = returned_reads or bool(read_names & returned_names)
        for node in ast.walk(fn):
            stored: ast.AST | None = None
            container = ""
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and (c := _container_of(target, module_level, self_level)):
                        container, stored = c, node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in CONTAINER_WRITES
                and (c := _container_of(node.func.value, module_level, self_level))
            ):
                container = c
                stored = node.args[-1] if node.args else None
            if not container:
                continue
            stores_output = isinstance(stored, ast.Name) and stored.id in returned_names
            if replay or stores_output:
                findings.append(
                    _f(
                        "cache_output_replay",
                        "high",
                        "hack",
                        "A6",
                        f"forward stores results in {container} and returns cached values on later "
                        "calls (result replay).",
                        src,
                        node,
                    )
                )
            elif stored is not None and flow.is_tensorish(stored):
                findings.append(
                    _f(
                        "forward_cache_write",
                        "medium",
                        "suspicious",
                        "A6",
                        f"forward writes tensors into {container}, state that persists across calls.",
                        src,
                        node,
                    )
                )
            else:
                findings.append(
                    _f(
                        "forward_config_cache",
                        "info",
                        "info",
                        "D4",
                        f"forward caches non-tensor configuration in {container} (launch parameters).",
                        src,
                        node,
                    )
                )
        findings.extend(_self_tensor_state(src, facts, fn, flow, returned_names))
    return findings


def _container_read(call: ast.Call, module_level: set[str], self_level: set[str]) -> bool:
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in {"get", "pop", "setdefault", "__getitem__"}
        and bool(_container_of(call.func.value, module_level, self_level))
    )


def _self_tensor_state(
    src: KernelSource,
    facts: PythonFacts,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    flow: _FlowState,
    returned_names: set[str],
) -> list[Finding]:
    """self.attr = <tensor> inside forward: replay when the attribute (or what it holds) is what gets returned."""
    findings: list[Finding] = []
    returned_attrs = {self_attr(e) for r in _returns(fn) for e in _returned_exprs(r) if self_attr(e)}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            attr = self_attr(target)
            if not attr or attr in facts.kernel_handles or not flow.is_tensorish(node.value):
                continue
            if attr in returned_attrs or (isinstance(node.value, ast.Name) and node.value.id in returned_names):
                findings.append(
                    _f(
                        "cache_output_replay",
                        "high",
                        "hack",
                        "A6",
                        f"forward keeps its output in self.{attr} and returns it across calls.",
                        src,
                        node,
                    )
                )
            else:
                findings.append(
                    _f(
                        "forward_state_write",
                        "info",
                        "info",
                        "D4",
                        f"forward keeps a tensor in self.{attr} across calls (workspace reuse).",
                        src,
                        node,
                    )
                )
    return findings


# What a tensor's layout is, not its values: a memo of these under an address cannot replay an output.
LAYOUT_CALLS = {"stride", "size", "is_contiguous", "dim", "numel", "nelement", "element_size", "storage_offset"}
LAYOUT_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "layout"}


def _layout_only(value: ast.AST) -> bool:
    """`(tuple(t.stride()), t.is_contiguous())`: a value made of a tensor's layout and constants only."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Tuple | ast.List):
        return all(_layout_only(e) for e in value.elts)
    if isinstance(value, ast.Attribute):
        return value.attr in LAYOUT_ATTRS
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in {"tuple", "len", "bool"}:
        return all(_layout_only(a) for a in value.args)
    return isinstance(value, ast.Call) and call_name(value) in LAYOUT_CALLS


def _layout_memo_keys(fn: ast.AST) -> set[int]:
    """The nodes inside the key of a store whose value is layout only: `memo[t.data_ptr()] = (t.stride(), ...)`,
    what hand-written extensions remember about a buffer to skip a re-check."""
    keys: set[int] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _layout_only(node.value):
            for target in node.targets:
                if isinstance(target, ast.Subscript):
                    keys.update(id(n) for n in ast.walk(target.slice))
    return keys


def rule_pointer_keys(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """A6: data_ptr()/id()/_version of an input used as a key or compared, the classic replay fingerprint.

    The same fingerprint taken on the module's own parameters (self.linear.weight) only invalidates a derived
    weight (a pre-transposed copy rebuilt when the weight changes): that is D4 weight pre-processing, info.
    """
    findings: list[Finding] = []
    seen: set[int] = set()
    for fn in facts.runtime_functions:
        call_args: set[int] = set()
        own: set[str] = {"self"}  # names bound to the module's own state: w = self.linear.weight
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and not (
                isinstance(node.func, ast.Name) and node.func.id in {"hash", "tuple", "str", "id"}
            ):
                call_args.update(id(a) for a in [*node.args, *(k.value for k in node.keywords)])
            if isinstance(node, ast.Assign) and root_name(node.value) == "self":
                own.update(t.id for t in node.targets if isinstance(t, ast.Name))
        layout_keys = _layout_memo_keys(fn)
        for node in ast.walk(fn):
            receiver: ast.AST | None = None
            if isinstance(node, ast.Call) and call_name(node) == "data_ptr" and id(node) not in call_args:
                receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id":
                receiver = node.args[0] if node.args else None
            elif isinstance(node, ast.Attribute) and node.attr == "_version":
                receiver = node.value
            else:
                continue
            if node.lineno in seen:
                continue
            seen.add(node.lineno)
            if receiver is not None and root_name(receiver) in own:
                findings.append(
                    _f(
                        "parameter_version_key",
                        "info",
                        "info",
                        "D4",
                        "The module's own parameter address/version keys a derived-weight cache "
                        "(rebuilt when the weight changes).",
                        src,
                        node,
                    )
                )
                continue
            if id(node) in layout_keys:
                findings.append(
                    _f(
                        "layout_memo",
                        "info",
                        "info",
                        "D4",
                        "An input's address keys a memo of its layout (strides, contiguity), not of any values: it "
                        "cannot replay an output.",
                        src,
                        node,
                    )
                )
                continue
            findings.append(
                _f(
                    "pointer_key",
                    "high",
                    "hack",
                    "A6",
                    "An input's address/identity/version (data_ptr, id, _version) is used as a key "
                    "or compared: the fingerprint of cross-call result replay.",
                    src,
                    node,
                )
            )
    return findings
