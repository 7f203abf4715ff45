"""Peak device memory of one forward call (docs/protocol.md section 5): for both workers and the baseline sweep.
torch only; never imports candidate code.

The counters are bound when this module is imported. The candidate worker imports it before any kernel code
exists, so a kernel that later replaces torch.cuda's counters does not change what is read here (tamper_watch.py
reports such a replacement as well).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import torch

Handler = Callable[[dict[str, Any]], dict[str, Any]]

_allocated = torch.cuda.memory_allocated
_peak = torch.cuda.max_memory_allocated
_reset = torch.cuda.reset_peak_memory_stats
_max_reserved = torch.cuda.max_memory_reserved
_reserved_high = 0  # the allocator's reserved peak before the last reset (peak_bytes resets every peak)
_synchronize = torch.cuda.synchronize
_initialized: Callable[[], bool] = torch.cuda.is_initialized
# worker command -> the reserved peak it raised the allocator to (raised_by): which of the reference worker's steps
# made it hold what it held, the staircase the declaration (orchestrator/declared_memory.py) has to cover
_raised_by: dict[str, int] = {}
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


def raising(name: str, handler: Handler) -> Handler:
    """`handler`, noting under `name` what it raised the allocator's reserved peak to (raised_by). The reference
    worker's commands only: a host-side counter read after each, no synchronisation; nothing off CUDA."""

    def noted(message: dict[str, Any]) -> dict[str, Any]:
        try:
            return handler(message)
        finally:
            # never in place of the command's own reply or error (a broken CUDA context fails the next command)
            with contextlib.suppress(RuntimeError):
                if _initialized() and (peak := reserved_peak_bytes()) > max(_raised_by.values(), default=0):
                    _raised_by[name] = peak

    return noted


def raised_by() -> dict[str, int]:
    """Each command that raised the reserved peak, with what it raised it to: the largest is the command during
    which this process reached its peak; the others, the steps on the way (in this process: a later process pair
    starts again from nothing)."""
    return dict(_raised_by)
