"""Facts about a kernel's Python side that several rules share: imports, kernel handles, ModelNew's methods."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluator.audit.source import KernelSource

# Calls whose result is a compiled native module (load_inline and friends) or a raw kernel object.
KERNEL_FACTORIES = {
    "load_inline",
    "load",
    "compile_kernel",
    "RawKernel",
    "RawModule",
    "SourceModule",
    "ElementwiseKernel",
}
# Calls that create a tensor with constant (or uninitialised) content.
CONSTANT_CONSTRUCTORS = {
    "zeros",
    "ones",
    "full",
    "empty",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "new_zeros",
    "new_ones",
    "new_full",
    "new_empty",
    "empty_strided",
    "tensor",
    "as_tensor",
}
# Methods that return a view of (or a copy with the same values as) their receiver.
PASSTHROUGH_METHODS = {
    "view",
    "reshape",
    "contiguous",
    "expand",
    "expand_as",
    "view_as",
    "reshape_as",
    "t",
    "transpose",
    "permute",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unflatten",
    "as_strided",
    "detach",
    "clone",
    "to",
    "narrow",
    "select",
    "float",
    "type_as",
    "cuda",
    "requires_grad_",
    "movedim",
    "swapaxes",
    "__getitem__",
}
# Attribute reads that give a tensor's metadata, not its values (so x.shape does not taint a name as a tensor).
METADATA_ATTRS = {"shape", "size", "numel", "dim", "ndim", "dtype", "device", "stride", "is_contiguous", "element_size"}


def dotted(node: ast.AST | None) -> str:
    """'torch.cuda.Event.elapsed_time' for an attribute chain; '' when it is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def root_name(node: ast.AST | None) -> str:
    """The leftmost Name of an attribute / subscript / call chain ('' when there is none)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call | ast.Starred):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def call_name(node: ast.Call) -> str:
    """The last component of the called name: 'zeros' for torch.zeros(...), 'launch' for k[grid].launch()."""
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def self_attr(node: ast.AST | None) -> str:
    """'cache' for self.cache (only one level)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return ""


def function_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = fn.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return [n for n in names if n not in {"self", "cls"}]


@dataclass
class PythonFacts:
    """What the rules need to know about the module's Python code."""

    tree: ast.Module
    imported: dict[str, str] = field(default_factory=dict)  # local name -> module path ('F' -> 'torch.nn.functional')
    kernel_handles: set[str] = field(default_factory=set)  # names / self attrs bound to compiled kernels
    triton_kernels: set[str] = field(default_factory=set)
    kernel_helpers: set[str] = field(default_factory=set)  # module functions that launch a kernel
    module_constants: dict[str, ast.AST] = field(default_factory=dict)  # module-level NAME = literal
    model_new: ast.ClassDef | None = None
    runtime_functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=list)

    @property
    def forward(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for fn in self.runtime_functions:
            if fn.name == "forward":
                return fn
        return None

    def is_kernel_call(self, node: ast.AST) -> bool:
        """A call that launches custom code: ext.fn(...), kernel[grid](...), a helper that does, self.ext.fn()."""
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Subscript):  # triton: kernel[grid](...)
            return root_name(func.value) in self.triton_kernels or dotted(func.value) in self.triton_kernels
        root = root_name(func)
        if root in self.kernel_handles or root in self.kernel_helpers or root in self.triton_kernels:
            return True
        if root == "self":
            attr = self_attr(func) or self_attr(getattr(func, "value", None))
            return attr in self.kernel_handles or f"self.{attr}" in self.kernel_handles
        return False

    def contains_kernel_call(self, nodes: Sequence[ast.AST] | ast.AST) -> bool:
        items = [nodes] if isinstance(nodes, ast.AST) else nodes
        return any(self.is_kernel_call(sub) for node in items for sub in ast.walk(node))

    def module_roots(self) -> set[str]:
        """Local names bound by import statements (the things a kernel must not reassign attributes on)."""
        return set(self.imported)


def collect_python_facts(src: KernelSource) -> PythonFacts | None:
    if src.tree is None:
        return None
    facts = PythonFacts(tree=src.tree)
    tree = src.tree
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                facts.imported[(alias.asname or alias.name).split(".")[0]] = (
                    alias.name if alias.asname else (alias.name.split(".")[0])
                )
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                facts.imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if (
                    dotted(target).endswith("jit")
                    or dotted(target).endswith("autotune")
                    or dotted(target).endswith("heuristics")
                ):
                    facts.triton_kernels.add(node.name)

    # Names bound to compiled kernels, at module level or on self (self.ext = load_inline(...)), and their aliases
    # (self.fn = self.ext.fn): two rounds, for an alias written before the line that binds its handle.
    for node in [n for _ in range(2) for n in ast.walk(tree)]:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if call_name(node.value) in KERNEL_FACTORIES or _is_kernel_lookup(node.value, facts):
                for target in node.targets:
                    _bind_handle(target, facts)
        elif isinstance(node, ast.Assign) and _refers_to_kernel(node.value, facts):
            for target in node.targets:
                _bind_handle(target, facts)

    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant | ast.Tuple | ast.List)
        ):
            facts.module_constants[stmt.targets[0].id] = stmt.value
        if isinstance(stmt, ast.ClassDef) and stmt.name == "ModelNew":
            facts.model_new = stmt

    # Module functions that (transitively, two rounds is enough in practice) launch a kernel.
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    for _ in range(2):
        for fn in functions:
            if fn.name not in facts.triton_kernels and facts.contains_kernel_call(fn.body):
                facts.kernel_helpers.add(fn.name)

    facts.runtime_functions = _runtime_functions(tree, functions, facts.triton_kernels)
    return facts


def _runtime_functions(
    tree: ast.Module, functions: list[ast.FunctionDef | ast.AsyncFunctionDef], triton_kernels: set[str]
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Code that runs per call: forward/__call__ of every class in the file, the methods they call through
    self.<name>(...), and the module functions they call, transitively. Constructors and what only they call
    (e.g. ResNet's _make_layer) run once and are left out."""
    module_fns = {fn.name: fn for fn in functions if fn.name not in triton_kernels}
    todo: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]]] = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = {i.name: i for i in cls.body if isinstance(i, ast.FunctionDef | ast.AsyncFunctionDef)}
        for entry in ("forward", "__call__", "__torch_function__", "__torch_dispatch__"):
            if entry in methods:
                todo.append((methods[entry], methods))
    seen: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    while todo:
        fn, methods = todo.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            if (attr := self_attr(node.func)) and attr in methods and attr not in {"__init__", "__new__"}:
                todo.append((methods[attr], methods))
            elif isinstance(node.func, ast.Name) and node.func.id in module_fns:
                todo.append((module_fns[node.func.id], {}))
    return list(seen.values())


def _bind_handle(target: ast.AST, facts: PythonFacts) -> None:
    if isinstance(target, ast.Name):
        facts.kernel_handles.add(target.id)
    elif attr := self_attr(target):
        facts.kernel_handles.add(attr)


def _is_kernel_lookup(call: ast.Call, facts: PythonFacts) -> bool:
    """getattr(ext, "fn") or ext.get_function(...) on a known handle."""
    if call_name(call) == "getattr":
        return bool(call.args) and root_name(call.args[0]) in facts.kernel_handles
    # Calling a kernel (ext.f(x)) returns a tensor; only lookups (cupy's get_function) return another kernel.
    return root_name(call.func) in facts.kernel_handles and call_name(call) in {"get_function", "get_kernel"}


def _refers_to_kernel(value: ast.AST, facts: PythonFacts) -> bool:
    """self.fn = ext.relu_cuda / fn = ext / self.k = my_triton_kernel / self.fn = self.ext.relu_cuda."""
    if not isinstance(value, ast.Name | ast.Attribute):
        return False
    root = root_name(value)
    if root == "self":  # the handle is the attribute on self the chain starts from
        while isinstance(value, ast.Attribute) and not self_attr(value):
            value = value.value
        root = self_attr(value)
    return root in facts.kernel_handles or root in facts.triton_kernels
