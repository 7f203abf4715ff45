"""Concurrency and laziness rules: side streams, threads/processes, tensor subclasses (A1, A2, A3)."""

from __future__ import annotations

import ast

from evaluator.audit.findings import Finding
from evaluator.audit.python_facts import (
    PythonFacts,
    call_name,
    dotted,
)
from evaluator.audit.python_rules.common import _f
from evaluator.audit.source import KernelSource

# --- Concurrency and laziness (A1, A2, A3) ---------------------------------------------------------------------

STREAM_CALLS = {
    "torch.cuda.Stream",
    "torch.cuda.stream",
    "torch.cuda.ExternalStream",
    "cuda.Stream",
    "Stream",
    "torch.Stream",
    "cp.cuda.Stream",
    "cupy.cuda.Stream",
}
SYNC_CALLS = {"synchronize", "wait_stream", "wait_event", "current_stream"}


def rule_python_streams_threads(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """A1: side streams created in Python; A2: threads, processes or executors."""
    findings: list[Finding] = []
    synced = any(isinstance(n, ast.Call) and call_name(n) in SYNC_CALLS for n in ast.walk(facts.tree))
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Call) and dotted(node.func) in STREAM_CALLS:
            sev, verdict = ("medium", "suspicious") if synced else ("high", "hack")
            findings.append(
                _f(
                    "side_stream",
                    sev,
                    verdict,
                    "A1",
                    "Work is placed on a non-default CUDA stream"
                    + (
                        " (joined with a synchronize/wait)."
                        if synced
                        else " that is never joined: events on the current stream stop before it finishes."
                    ),
                    src,
                    node,
                )
            )
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in {"threading", "multiprocessing", "concurrent", "_thread", "asyncio"}:
                    findings.append(
                        _f(
                            "thread_or_process",
                            "high",
                            "hack",
                            "A2",
                            f"Imports {module}: work can continue in the background after forward returns.",
                            src,
                            node,
                        )
                    )
    return findings


def rule_tensor_subclass(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """A3: torch.Tensor subclasses, __torch_function__/__torch_dispatch__, _make_subclass (lazy outputs)."""
    findings: list[Finding] = []
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.ClassDef):
            bases = {dotted(b) for b in node.bases}
            if bases & {"torch.Tensor", "Tensor", "torch._C._TensorBase", "torch._C.TensorBase"}:
                findings.append(
                    _f(
                        "tensor_subclass",
                        "high",
                        "hack",
                        "A3",
                        "Defines a torch.Tensor subclass: outputs can defer work until the checker reads them.",
                        src,
                        node,
                    )
                )
        elif isinstance(node, ast.FunctionDef) and node.name in {"__torch_function__", "__torch_dispatch__"}:
            findings.append(
                _f(
                    "tensor_subclass",
                    "high",
                    "hack",
                    "A3",
                    f"Overrides {node.name}: tensor operations are intercepted.",
                    src,
                    node,
                )
            )
        elif isinstance(node, ast.Call) and call_name(node) in {"_make_subclass", "_make_wrapper_subclass"}:
            findings.append(
                _f(
                    "tensor_subclass",
                    "high",
                    "hack",
                    "A3",
                    "Builds a tensor subclass instance (_make_subclass).",
                    src,
                    node,
                )
            )
    return findings
