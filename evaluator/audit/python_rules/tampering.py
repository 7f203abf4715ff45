"""Process-tampering rules: module patches, gc/inspect/ctypes/fd tricks, evaluator probes (A4, A5, A7, B6, C1, C2)."""

from __future__ import annotations

import ast

from evaluator.audit.findings import Finding
from evaluator.audit.python_facts import (
    PythonFacts,
    dotted,
    root_name,
)
from evaluator.audit.python_rules.common import _f
from evaluator.audit.source import KernelSource

TIMER_NAMES = {
    "elapsed_time",
    "record",
    "synchronize",
    "perf_counter",
    "perf_counter_ns",
    "time",
    "monotonic",
    "monotonic_ns",
    "process_time",
    "Event",
    "time_ns",
}


# --- Tampering with the process (A4, A5, B6, C1, A7) -----------------------------------------------------------


def rule_module_patches(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """A4/C1: assignments into imported modules (torch, time, sys.modules, builtins...) or their classes."""
    roots = facts.module_roots() | {"__builtins__"}
    # Names assigned from an imported module's attribute (Event = torch.cuda.Event) are module aliases too.
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and root_name(node.value) in roots:
            roots.update(t.id for t in node.targets if isinstance(t, ast.Name) and t.id not in facts.kernel_handles)
    findings: list[Finding] = []
    for node in ast.walk(facts.tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"setattr", "delattr"}:
            if node.args and root_name(node.args[0]) in roots:
                name = dotted(node.args[0])
                findings.append(_patch_finding(src, node, name, node.args[1] if len(node.args) > 1 else None))
            continue
        for target in targets:
            name = dotted(target)
            if isinstance(target, ast.Subscript) and dotted(target.value) in {"sys.modules", "__builtins__"}:
                findings.append(
                    _f(
                        "module_attribute_patch",
                        "high",
                        "hack",
                        "C1",
                        "Replaces an entry of sys.modules/__builtins__: the checker or harness may now "
                        "run patched code.",
                        src,
                        node,
                    )
                )
            elif isinstance(target, ast.Attribute) and root_name(target) in roots:
                if name.startswith("torch.backends."):
                    findings.append(
                        _f(
                            "backend_flag",
                            "info",
                            "info",
                            "E1",
                            "Changes a torch.backends flag in the candidate process (precision/algorithm policy).",
                            src,
                            node,
                        )
                    )
                elif name.startswith(("sys.stdout", "sys.stderr", "sys.stdin")):
                    findings.append(
                        _f(
                            "fd_tampering",
                            "high",
                            "hack",
                            "A5",
                            "Replaces the process's standard streams (result-channel forgery).",
                            src,
                            node,
                        )
                    )
                else:
                    findings.append(_patch_finding(src, node, name, target))
    return findings


def _patch_finding(src: KernelSource, node: ast.AST, name: str, target: ast.AST | None) -> Finding:
    parts = set(name.split("."))
    if isinstance(target, ast.Constant) and isinstance(target.value, str):
        parts.add(target.value)
    timer = bool(parts & TIMER_NAMES) or name.startswith("time.")
    return _f(
        "module_attribute_patch",
        "high",
        "hack",
        "A4" if timer else "C1",
        f"Assigns into an imported module or class ({name or 'setattr'}): "
        + ("timers no longer measure the real time." if timer else "library or checker behaviour is patched."),
        src,
        node,
    )


INTROSPECTION_CALLS = {
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "sys._getframe",
    "inspect.stack",
    "inspect.currentframe",
    "inspect.getouterframes",
    "inspect.getmembers",
    "inspect.getsource",
    "sys.settrace",
    "sys.setprofile",
    "gc.callbacks.append",
}
FRAME_ATTRS = {"f_back", "f_globals", "f_locals", "f_code", "__code__", "__globals__", "tb_frame"}
FD_CALLS = {
    "os.dup",
    "os.dup2",
    "os.fdopen",
    "os.write",
    "os.open",
    "os.pipe",
    "os.close",
    "os.kill",
    "os.fork",
    "os.execv",
    "os.system",
    "subprocess.run",
    "subprocess.Popen",
    "subprocess.call",
    "subprocess.check_output",
    "pip.main",
    "os._exit",
    "sys.exit",
}


def rule_process_tampering(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """B6/C1: gc/frame introspection; A5: file-descriptor/stdout tricks; C2: subprocesses and native access."""
    findings: list[Finding] = []
    aliases = {local: module for local, module in facts.imported.items()}

    def resolve(name: str) -> str:
        head, _, rest = name.partition(".")
        full = aliases.get(head, head)
        return f"{full}.{rest}" if rest else full

    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Call):
            name = resolve(dotted(node.func))
            if name in INTROSPECTION_CALLS:
                findings.append(
                    _f(
                        "introspection",
                        "high",
                        "hack",
                        "B6,C1",
                        f"{name}() reaches objects or frames outside the kernel (reference outputs, harness state).",
                        src,
                        node,
                    )
                )
            elif name in FD_CALLS:
                kind = "C2" if name.startswith(("subprocess", "pip", "os.system", "os.exec", "os.fork")) else "A5"
                findings.append(
                    _f(
                        "fd_tampering" if kind == "A5" else "subprocess",
                        "high",
                        "hack",
                        kind,
                        f"{name}() touches file descriptors or processes: the result channel or sandbox "
                        "could be forged.",
                        src,
                        node,
                    )
                )
        elif isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
            findings.append(
                _f("introspection", "high", "hack", "C1", f"Accesses frame/code internals ({node.attr}).", src, node)
            )
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                top = module.split(".")[0]
                if top in {"ctypes", "cffi", "mmap"}:
                    findings.append(
                        _f(
                            "native_access",
                            "medium",
                            "suspicious",
                            "A4,C1",
                            f"Imports {top}: native memory access can patch timers or read harness memory.",
                            src,
                            node,
                        )
                    )
                elif top == "inspect":
                    findings.append(
                        _f(
                            "introspection",
                            "medium",
                            "suspicious",
                            "C1",
                            "Imports inspect (frame and source introspection).",
                            src,
                            node,
                        )
                    )
                elif top in {"subprocess", "pip"}:
                    findings.append(_f("subprocess", "medium", "suspicious", "C2", f"Imports {top}.", src, node))
    return findings


def rule_evaluator_probe(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """A7: reads the command line, the environment or __main__ to tell benchmarking from checking."""
    findings: list[Finding] = []
    for node in ast.walk(facts.tree):
        name = dotted(node) if isinstance(node, ast.Attribute) else ""
        if name == "sys.argv" or name.startswith("__main__"):
            findings.append(
                _f(
                    "evaluator_probe",
                    "high",
                    "hack",
                    "A7",
                    "Reads sys.argv/__main__: behaviour can depend on whether it is being timed.",
                    src,
                    node,
                )
            )
        elif isinstance(node, ast.Call) and dotted(node.func) in {"os.environ.get", "os.getenv"}:
            findings.append(
                _f(
                    "evaluator_probe",
                    "medium",
                    "suspicious",
                    "A7",
                    "Reads an environment variable: behaviour can depend on the evaluation mode.",
                    src,
                    node,
                )
            )
        elif isinstance(node, ast.ImportFrom) and node.module in {"__main__", "reference", "eval", "utils"}:
            findings.append(
                _f(
                    "evaluator_probe",
                    "high",
                    "hack",
                    "A7,C1",
                    f"Imports from the harness's namespace ({node.module}).",
                    src,
                    node,
                )
            )
    return findings
