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
_synchronize = torch.cuda.synchronize
_no_grad = torch.no_grad


def peak_bytes(fn: Callable[..., Any], args: Sequence[Any], device: str) -> int | None:
    """Bytes allocated at the peak of one call of `fn`, above what inputs and weights already held; None off CUDA
    (the CPU allocator keeps no peak)."""
    if not device.startswith("cuda"):
        return None
    with _no_grad():
        _synchronize()
        base = _allocated()
        _reset()
        out = fn(*args)
        _synchronize()
        peak = _peak() - base
        del out
    return int(peak)
