"""The L2 flush before every timed call (docs/protocol.md section 4), and the no-flush of KernelBench's own loop.
torch only; runs in both workers and the baseline sweep.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch


def no_flush() -> None:
    """The flush of KernelBench's own timing loop (the comparison loop): none."""


class L2Flusher:
    """Evicts the GPU's L2 before a timed call: resets persisting L2 lines, then writes >= 2x L2 (>= 256 MiB)."""

    def __init__(self, device: str) -> None:
        self.enabled = device.startswith("cuda")
        self.buffer: torch.Tensor | None = None
        self.reset_fn: Any = None
        self.detail = "no flush (CPU)"
        if not self.enabled:
            return
        l2 = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0))
        nbytes = max(2 * l2, 256 << 20)
        self.buffer = torch.empty(nbytes, dtype=torch.int8, device=device)
        self.reset_fn = _cudart_function("cudaCtxResetPersistingL2Cache")
        limit_fn = _cudart_function("cudaDeviceSetLimit")
        if limit_fn is not None:
            limit_fn(ctypes.c_int(0x06), ctypes.c_size_t(0))  # cudaLimitPersistingL2CacheSize = 0
        reset = "persisting-L2 reset each call" if self.reset_fn else "persisting-L2 reset unavailable"
        self.detail = f"write {nbytes >> 20} MiB (L2 {l2 >> 20} MiB) before each timed call; {reset}"

    def __call__(self) -> None:
        if not self.enabled:
            return
        if self.reset_fn is not None:
            self.reset_fn()
        assert self.buffer is not None
        self.buffer.fill_(1)


def flusher_before_sets(device: str) -> L2Flusher:
    """The flush buffer in a device segment of its own, made before a worker's timing sets. Made after them, it was
    cut from a cached block a forward had freed (a 6 GiB output's, on the big problems), and the rest of that block
    (5.75 GiB) could serve no set again while the buffer lived: on an H100 the fresh-input probe's 6 GiB set of L1/19
    then ran out of the worker's share of the device (0.45) with 24.25 GiB in use and 5.75 GiB stranded."""
    if device.startswith("cuda"):
        torch.cuda.empty_cache()  # cached blocks back to the device: the buffer gets a segment of its own
    return L2Flusher(device)


def _cudart_function(name: str) -> Any:
    """Find a CUDA runtime function in the libcudart torch already loaded (read from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "libcudart" in line}
        for path in sorted(paths):
            return getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError):
        return None
    return None
