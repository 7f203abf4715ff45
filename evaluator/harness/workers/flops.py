"""FLOPs and bytes of one forward of a problem at its benchmark shapes (the bound is in roofline.py).

The forward runs on the meta device: shapes only, nothing allocated or computed, so a 6 GB problem counts in
milliseconds. Matrix FLOPs come from torch.utils.flop_counter (matmul, convolution, attention: 2 per multiply-add);
vector FLOPs from a dispatch mode beside it: one per output element of an elementwise op, one per input element of a
reduction, five per element of a softmax (max, subtract, exp, sum, divide). Bytes: inputs read once, output written
once, parameters and buffers read once. Where the model cannot run on the meta device, nothing is counted (None).

torch only (no Django): the reference worker counts at setup, `manage.py count_flops` for stored problems.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

_aten = torch.ops.aten
SOFTMAX_FLOPS_PER_ELEMENT = 5
_SOFTMAX = {_aten._softmax.default, _aten._log_softmax.default}
_REDUCTIONS = {
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "prod",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "norm",
    "linalg_vector_norm",
    "logsumexp",
    "cumsum",
    "argmax",
    "argmin",
    "any",
    "all",
}
_FREE = {
    "view",
    "_unsafe_view",
    "reshape",
    "expand",
    "permute",
    "transpose",
    "t",
    "squeeze",
    "unsqueeze",
    "clone",
    "copy_",
    "contiguous",
    "detach",
    "alias",
    "slice",
    "select",
    "as_strided",
    "empty",
    "zeros",
    "ones",
    "fill_",
    "zero_",
    "cat",
    "stack",
    "split",
    "split_with_sizes",
    "unbind",
    "flatten",
    "_to_copy",
    "to",
    "lift_fresh",
    "new_empty",
    "new_zeros",
    "empty_like",
    "zeros_like",
    "ones_like",
    "randn",
    "rand",
    "normal_",
    "uniform_",
    "index_select",
    "gather",
    "pad",
    "constant_pad_nd",
}


def _numel(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, list | tuple):
        return sum(_numel(v) for v in value)
    return 0


class VectorFlops(TorchDispatchMode):
    """Counts the non-matrix FLOPs of the ops it sees (the matrix ones are FlopCounterMode's)."""

    def __init__(self, matrix_ops: set[Any]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's, untyped (untyped_calls_exclude misses super())
        self.matrix_ops = matrix_ops
        self.flops = 0
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        packet = getattr(func, "overloadpacket", func)
        name = str(getattr(packet, "__name__", func)).split(".")[-1]
        if packet in self.matrix_ops or name in _FREE:
            return out
        if func in _SOFTMAX:
            count = SOFTMAX_FLOPS_PER_ELEMENT * _numel(args[0])
        elif name.rstrip("_") in _REDUCTIONS:
            count = _numel(args[0])
        elif torch.Tag.pointwise in getattr(func, "tags", ()):
            count = _numel(out)
        else:
            count = 0
        if count:
            self.ops[name] += count
            self.flops += count
        return out


class PeakBytes(TorchDispatchMode):
    """The most bytes one forward holds at once, on the meta device: inputs and state from the start, plus every op's
    new (non-view) output for as long as Python keeps it, as the caching allocator would on a GPU. A declared
    footprint for sharing the GPU by memory (orchestrator/gpu_holds.py): an input set and its output alone missed
    the 8 GiB intermediate of a KernelBench L3 problem, which then ran out of memory beside other evaluations.
    Library workspaces (cuDNN, cuBLAS) are not tensors and not counted: the declaration's margin covers them."""

    def __init__(self, held: int) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's, untyped (as VectorFlops)
        self.live = self.peak = held

    def _free(self, nbytes: int) -> None:
        self.live -= nbytes

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        returns = getattr(getattr(func, "_schema", None), "returns", ())
        views = any(getattr(r, "alias_info", None) is not None for r in returns)
        if not views:
            for tensor in out if isinstance(out, list | tuple) else [out]:
                if isinstance(tensor, torch.Tensor):
                    nbytes = tensor.numel() * tensor.element_size()
                    self.live += nbytes
                    weakref.finalize(tensor, self._free, nbytes)
            self.peak = max(self.peak, self.live)
        return out


def _dtype(values: list[Any]) -> str | None:
    for value in values:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return str(value.dtype).removeprefix("torch.")
    return None


def count_namespace(ns: dict[str, Any], init: list[Any] | None = None) -> dict[str, Any] | None:
    """{matrix_flops, vector_flops, flops, bytes, input_bytes, output_bytes, param_bytes, peak_bytes, dtype} of one
    forward of
    the problem in `ns` (a loaded problem file), or None where it cannot run on the meta device."""
    try:
        with torch.device("meta"), torch.no_grad():
            init = list(ns["get_init_inputs"]()) if init is None else init
            model = ns["Model"](*init)
            inputs = list(ns["get_inputs"]())
            state = list(model.parameters()) + list(model.buffers())
            matrix = FlopCounterMode(display=False)
            vector = VectorFlops(set(matrix.flop_registry))
            peak = PeakBytes(_bytes(inputs) + _bytes(state))
            with matrix, vector, peak:
                out = model(*inputs)
    except Exception:  # an estimate only
        return None
    input_bytes = _bytes(inputs)
    output_bytes = _bytes([out])
    param_bytes = _bytes(state)
    matrix_flops = int(matrix.get_total_flops())
    return {
        "matrix_flops": matrix_flops,
        "vector_flops": int(vector.flops),
        "flops": matrix_flops + int(vector.flops),
        "bytes": input_bytes + output_bytes + param_bytes,
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "param_bytes": param_bytes,
        "peak_bytes": max(peak.peak, input_bytes + output_bytes + param_bytes),
        "dtype": _dtype(inputs + state),
    }


def count_source(source: str) -> dict[str, Any] | None:
    """Count a problem file's text (trusted: problem files are public and imported by staff)."""
    from evaluator.harness.workers.inputs import load_problem

    try:
        ns = load_problem(source)
    except Exception:
        return None
    return count_namespace(ns)


def _bytes(values: Any) -> int:
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, list | tuple):
        return sum(_bytes(v) for v in values)
    return 0
