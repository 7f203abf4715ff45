"""Peak device memory of one forward call (docs/protocol.md section 5): for both workers and the baseline sweep.
torch only; never imports candidate code.

The counters are bound when this module is imported. The candidate worker imports it before any kernel code
exists, so a kernel that later replaces torch.cuda's counters does not change what is read here (tamper_watch.py
reports such a replacement as well).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

_allocated = torch.cuda.memory_allocated
_peak = torch.cuda.max_memory_allocated
_reset = torch.cuda.reset_peak_memory_stats
_max_reserved = torch.cuda.max_memory_reserved
_reserved_high = 0  # the allocator's reserved peak before the last reset (peak_bytes resets every peak)
_synchronize = torch.cuda.synchronize
_no_grad = torch.no_grad


def peak_bytes(fn: Callable[..., Any], args: Sequence[Any], device: str) -> int | None:
    """Bytes allocated at the peak of one call of `fn`, above what inputs and weights already held; None off CUDA
    (the CPU allocator keeps no peak)."""
    if not device.startswith("cuda"):
        return None
    global _reserved_high
    with _no_grad():
        _synchronize()
        base = _allocated()
        _reserved_high = reserved_peak_bytes()
        _reset()
        out = fn(*args)
        _synchronize()
        peak = _peak() - base
        del out
    return int(peak)


def reserved_peak_bytes() -> int:
    """The most this process's allocator has held of the device since it started: reserved, cached blocks included
    (what the driver and the device's other processes see, not the tensors alone), across peak_bytes' resets."""
    return max(_reserved_high, int(_max_reserved()))
