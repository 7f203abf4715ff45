"""Fallback, precision, obfuscation and dropped-parameter rules (D3, B8, C3, B9/B11)."""

from __future__ import annotations

import ast

from evaluator.audit.findings import Finding
from evaluator.audit.python_facts import (
    PythonFacts,
    call_name,
    dotted,
    root_name,
    self_attr,
)
from evaluator.audit.python_rules.common import _f
from evaluator.audit.source import KernelSource

NORM_LAYERS = ("BatchNorm", "GroupNorm", "LayerNorm", "InstanceNorm")


# --- Fallbacks and policy (D3, B8, C3) -------------------------------------------------------------------------


def rule_try_fallback(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """D3: try/except around the kernel that falls back to PyTorch (or silently passes)."""
    findings: list[Finding] = []
    for fn in facts.runtime_functions:
        for node in ast.walk(fn):
            if not isinstance(node, ast.Try):
                continue
            for handler in node.handlers:
                silent = all(isinstance(s, ast.Pass) for s in handler.body)
                computes = any(isinstance(n, ast.Return | ast.Call) for s in handler.body for n in ast.walk(s))
                reraises = all(isinstance(s, ast.Raise) for s in handler.body)
                if reraises or not (silent or computes):
                    continue
                findings.append(
                    _f(
                        "try_except_fallback",
                        "medium",
                        "suspicious",
                        "D3",
                        "try/except in the runtime path: when the kernel fails the result silently "
                        "comes from another path" + (" (errors swallowed)." if silent else " (PyTorch)."),
                        src,
                        handler,
                    )
                )
    # A module-level try around the kernel build: forward will later choose a PyTorch path when it failed.
    for stmt in facts.tree.body:
        if isinstance(stmt, ast.Try) and any(
            isinstance(n, ast.Call) and call_name(n) in {"load_inline", "load"} for s in stmt.body for n in ast.walk(s)
        ):
            findings.append(
                _f(
                    "try_except_fallback",
                    "medium",
                    "suspicious",
                    "D3",
                    "The kernel build is wrapped in try/except: a failed build falls back to another path.",
                    src,
                    stmt.handlers[0] if stmt.handlers else stmt,
                )
            )
    return findings


def rule_subclass_reference(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """D3: ModelNew inherits the reference Model (inherit-and-pass)."""
    cls = facts.model_new
    if cls is None:
        return []
    if any(dotted(b).split(".")[-1] == "Model" for b in cls.bases):
        overrides = any(isinstance(i, ast.FunctionDef) and i.name == "forward" for i in cls.body)
        return [
            _f(
                "subclass_reference",
                "medium",
                "suspicious",
                "D3",
                "ModelNew subclasses the reference Model"
                + ("." if overrides else " and does not override forward: it is the reference."),
                src,
                cls,
            )
        ]
    return []


DOWNCAST_METHODS = {"half", "bfloat16"}
DOWNCAST_DTYPES = {"torch.float16", "torch.half", "torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2"}
# Calls whose positional dtype argument converts or reinterprets a tensor: x.to(torch.float16), x.type(...),
# x.view(torch.bfloat16), torch.autocast("cuda", torch.float16).
CONVERTING_CALLS = {"to", "type", "view", "autocast"}


def rule_precision(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """B8: fp32 work done in fp16/bf16 (.half(), .to(torch.float16), dtype=torch.bfloat16, ...). A reduced dtype
    only named in a test or a table (`if x.dtype == torch.float16`, `{torch.float16: tl.float16}`: the dispatch of
    a kernel written for several dtypes, which an fp32 input never takes) converts nothing and is not flagged.
    TF32 flags are info (policy)."""
    findings: list[Finding] = []
    seen: set[int] = set()
    for node in ast.walk(facts.tree):
        hit = ""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DOWNCAST_METHODS:
            hit = f".{node.func.attr}()"
        elif isinstance(node, ast.Call):
            dtypes = [a for a in node.args if call_name(node) in CONVERTING_CALLS] + [
                k.value for k in node.keywords if k.arg == "dtype"
            ]
            hit = next((dotted(d) for d in dtypes if dotted(d) in DOWNCAST_DTYPES), "")
            if dotted(node.func) == "torch.set_float32_matmul_precision":
                findings.append(
                    _f(
                        "tf32_policy",
                        "info",
                        "info",
                        "B8",
                        "Sets the fp32 matmul precision (TF32 policy; the verified baseline uses TF32 too).",
                        src,
                        node,
                    )
                )
        line = getattr(node, "lineno", 0)  # a Call when `hit` is set
        if hit and line not in seen:
            seen.add(line)
            findings.append(
                _f(
                    "precision_downcast",
                    "medium",
                    "suspicious",
                    "B8",
                    f"Computes in reduced precision ({hit}) for an fp32 problem.",
                    src,
                    node,
                )
            )
    return findings


DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__"}
DECODE_CALLS = {
    "base64.b64decode",
    "base64.b85decode",
    "base64.a85decode",
    "base64.b32decode",
    "zlib.decompress",
    "marshal.loads",
    "codecs.decode",
    "bytes.fromhex",
    "pickle.loads",
    "lzma.decompress",
    "bz2.decompress",
    "binascii.unhexlify",
    "binascii.a2b_base64",
}


def rule_dynamic_code(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """C3: exec/eval/compile, decoders of hidden payloads, getattr with computed names."""
    findings: list[Finding] = []
    for node in ast.walk(facts.tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        if isinstance(node.func, ast.Name) and name in DYNAMIC_CALLS:
            findings.append(
                _f(
                    "dynamic_code",
                    "high",
                    "hack",
                    "C3",
                    f"Calls {name}(): code that static review cannot see runs at import or call time.",
                    src,
                    node,
                )
            )
        elif name in DECODE_CALLS or name.endswith(".import_module"):
            findings.append(
                _f(
                    "dynamic_code",
                    "medium",
                    "suspicious",
                    "C3",
                    f"Calls {name}(): decodes or imports something only known at run time.",
                    src,
                    node,
                )
            )
        elif (
            name in {"getattr", "setattr"}
            and len(node.args) >= 2
            and not isinstance(node.args[1], ast.Constant)
            and root_name(node.args[0]) in facts.module_roots()
        ):
            findings.append(
                _f(
                    "dynamic_code",
                    "medium",
                    "suspicious",
                    "C3",
                    f"{name} on a module with a computed attribute name (filter evasion).",
                    src,
                    node,
                )
            )
    return findings


def rule_norm_affine_dropped(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """B9/B11: a norm layer whose statistics are used but whose affine weight/bias never reach the computation."""
    cls = facts.model_new
    if cls is None:
        return []
    norms: dict[str, ast.AST] = {}
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            layer = dotted(node.value.func).split(".")[-1]
            if layer.startswith(NORM_LAYERS) and not any(
                k.arg in {"affine", "elementwise_affine"} and isinstance(k.value, ast.Constant) and not k.value.value
                for k in node.value.keywords
            ):
                for target in node.targets:
                    if attr := self_attr(target):
                        norms[attr] = node
    findings = []
    for attr, node in norms.items():
        uses = [n for n in ast.walk(cls) if isinstance(n, ast.Attribute) and self_attr(n.value) == attr]
        called = any(isinstance(n, ast.Call) and self_attr(n.func) == attr for n in ast.walk(cls))
        passed_whole = any(
            isinstance(n, ast.Call) and any(self_attr(a) == attr for a in [*n.args, *(k.value for k in n.keywords)])
            for n in ast.walk(cls)
        )
        used_attrs = {n.attr for n in uses}
        if called or passed_whole or "state_dict" in used_attrs or "parameters" in used_attrs:
            continue
        if not used_attrs & {"weight", "bias"}:
            findings.append(
                _f(
                    "norm_affine_dropped",
                    "medium",
                    "suspicious",
                    "B9,B11",
                    f"self.{attr} is a normalisation layer whose weight and bias never reach the kernel "
                    "(correct only while they hold their default 1 and 0).",
                    src,
                    node,
                )
            )
    return findings
