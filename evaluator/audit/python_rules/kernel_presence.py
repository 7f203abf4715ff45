"""Custom-kernel presence rules: no kernel, decoy kernel, PyTorch doing the work (D1, D2)."""

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

HEAVY_TORCH_OPS = {
    "matmul",
    "mm",
    "bmm",
    "addmm",
    "einsum",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "linear",
    "softmax",
    "log_softmax",
    "layer_norm",
    "batch_norm",
    "group_norm",
    "instance_norm",
    "scaled_dot_product_attention",
    "lstm",
    "gru",
    "max_pool2d",
    "avg_pool2d",
    "cumsum",
    "cumprod",
    "sum",
    "mean",
    "norm",
    "baddbmm",
    "cross_entropy",
    "mse_loss",
}
NN_LAYER_PREFIXES = (
    "Conv",
    "Linear",
    "BatchNorm",
    "LayerNorm",
    "GroupNorm",
    "InstanceNorm",
    "LSTM",
    "GRU",
    "RNN",
    "MaxPool",
    "AvgPool",
    "Multihead",
    "Embedding",
    "Transformer",
    "ConvTranspose",
)


# --- Custom-kernel presence (D1, D2) ---------------------------------------------------------------------------


def rule_no_custom_kernel(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """D1: nothing in the file compiles or launches a custom kernel (policy, not fraud)."""
    if facts.kernel_handles or facts.triton_kernels or src.native_ranges:
        return []
    anchor = facts.forward or facts.model_new
    return [
        _f(
            "no_custom_kernel",
            "medium",
            "info",
            "D1",
            "No load_inline/CUDA source/@triton.jit kernel: the forward is plain PyTorch (D1 wrapping, not a "
            "faster kernel).",
            src,
            anchor,
        )
    ]


def rule_decoy_kernel(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """D2: a kernel is compiled or defined but no runtime code ever launches it."""
    runtime_nodes = list(facts.runtime_functions)
    if not (facts.kernel_handles or facts.triton_kernels) or not runtime_nodes:
        return []
    if any(facts.contains_kernel_call(fn.body) for fn in runtime_nodes):
        return []
    # A handle that is passed around (e.g. stored then called through a lambda) still counts as used.
    used = {n.id for fn in runtime_nodes for n in ast.walk(fn) if isinstance(n, ast.Name)}
    used |= {n.attr for fn in runtime_nodes for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
    if used & (facts.kernel_handles | facts.triton_kernels):
        return []
    return [
        _f(
            "decoy_kernel",
            "medium",
            "suspicious",
            "D2",
            "A custom kernel is compiled/defined but forward never launches it; PyTorch does the work.",
            src,
            facts.forward or facts.model_new,
        )
    ]


def rule_torch_compute(src: KernelSource, facts: PythonFacts) -> list[Finding]:
    """D1 (info): heavy PyTorch operators or nn layers called in forward next to the custom kernel."""
    fn = facts.forward
    if fn is None or not (facts.kernel_handles or facts.triton_kernels):
        return []
    layers: set[str] = set()
    for node in ast.walk(facts.model_new or facts.tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and dotted(node.value.func).split(".")[-1].startswith(NN_LAYER_PREFIXES)
        ):
            layers.update(self_attr(t) for t in node.targets if self_attr(t))
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        root = root_name(node.func)
        if (root in {"torch", "F"} and call_name(node) in HEAVY_TORCH_OPS) or self_attr(node.func) in layers:
            return [
                _f(
                    "torch_compute_in_forward",
                    "info",
                    "info",
                    "D1",
                    "forward also runs PyTorch operators/layers; part of the time is library time.",
                    src,
                    node,
                )
            ]
    return []
