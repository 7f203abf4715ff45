"""What is known of an out-of-memory failure beside other evaluations (gpu_holds.GpuHolds.crowded_out): how it
reads, what the device had free just after by the reference worker's reading, and torch's own account as the
kernel's worker gave it. stdlib only, like the orchestrator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# How an out-of-memory failure reads in a worker's reply (torch's OutOfMemoryError, the driver's error code).
OUT_OF_MEMORY = ("OutOfMemoryError", "CUDA out of memory", "CUDA_ERROR_OUT_OF_MEMORY")


def is_out_of_memory(failure: str) -> bool:
    return any(sign in failure for sign in OUT_OF_MEMORY)


def device_reading(reading: Mapping[str, Any]) -> str:
    """What the device had free, as the driver counts it across every process on it, read by the reference worker
    just after a failure (bring_up.note_reserved_peak); '' without a reading (no CUDA context, the reader gone or
    out of time)."""
    free, total = reading.get("free_bytes"), reading.get("total_bytes")
    if not isinstance(free, int) or not isinstance(total, int) or not total:
        return ""
    return f" ({free / 2**30:.1f} of the device's {total / 2**30:.1f} GiB free just after, by the driver's count)"


def allocator_said(failure: str) -> str:
    """torch's own account of an out-of-memory failure (what it tried to allocate, what the device had free, what
    the process held and was allowed), as the kernel's worker reported it: one line, cut; '' when absent. The
    kernel's word, so it is quoted as such and decides nothing."""
    at = failure.find("Tried to allocate")
    if at < 0:
        return ""
    said = " ".join(failure[at:].split("\n", 1)[0].split())[:400]
    return f" (the kernel's worker reported: {said})"
