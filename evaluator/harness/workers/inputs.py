"""A problem's inputs in a worker: the problem file loaded, inputs generated on the device from a secret seed (both
workers get the same bits, so inputs never cross processes), and small helpers on tensors and lists of them.
torch only; never imports candidate code.
"""

from __future__ import annotations

from typing import Any

import torch


def to_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list | tuple):
        return type(value)(to_device(v, device) for v in value)
    return value


def clone_all(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, list | tuple):
        return sum(tensor_bytes(v) for v in value)
    return 0


def load_problem(source: str) -> dict[str, Any]:
    """Execute a KernelBench problem file into a fresh namespace (the problem text is public and trusted)."""
    ns: dict[str, Any] = {"__name__": "kernelbench_problem"}
    exec(compile(source, "problem.py", "exec"), ns)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if name not in ns:
            raise ValueError(f"problem file defines no {name}")
    return ns


def make_inputs(ns: dict[str, Any], seed: int, scale: float | str, device: str) -> list[Any]:
    """get_inputs() under a seed, generated on the device, float tensors scaled (the distribution factor), or, when
    `scale` is "mixed", made positive with up to 64 random elements negated: a kernel that probes a few elements
    (at fixed or random places) to pick a sign-specific path almost surely sees only positives and takes it.

    Both workers call this with the same seed and get the same bits (same torch, same device), so inputs never have
    to cross processes. A candidate that patches torch's generators only changes its own inputs, and then its
    outputs no longer match the reference computed on the real ones.
    """
    with torch.device(device):
        torch.manual_seed(seed)
        raw = list(ns["get_inputs"]())
    inputs = []
    signs = torch.Generator(device=device).manual_seed(seed ^ 0x5EED)
    for value in to_device(raw, device):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            if scale == "mixed":
                value = value.abs().contiguous()
                if value.numel():
                    flat = value.view(-1)
                    count = max(1, min(64, flat.numel() // 64))
                    where = torch.randint(0, flat.numel(), (count,), generator=signs, device=value.device)
                    flat[where] = -flat[where]
            elif scale != 1.0:
                value = value * float(scale)
        inputs.append(value)
    return inputs
