"""torch.profiler around one forward call: the device kernels it launched (launched.py summarises them)
and, on request, a Chrome trace of it. Both workers import this; it is never used inside the timed calls.

torch only (no Django).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def profile_call(fn: Callable[[], Any], device: str, trace_path: str | None = None) -> list[list[Any]] | None:
    """[[kernel name, device time in us], ...] of the kernels one call launched; None on the CPU or when the
    profiler fails. With `trace_path`, the call's Chrome trace is written there too."""
    if not device.startswith("cuda"):
        return None
    from torch.profiler import ProfilerActivity, profile

    try:
        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            out = fn()
            torch.cuda.synchronize()
        del out
        events = []
        for evt in prof.events():
            if str(getattr(evt, "device_type", "")).endswith("CUDA"):
                us = getattr(evt, "device_time", None)
                if us is None:
                    us = getattr(evt, "cuda_time", 0.0)
                events.append([evt.name, float(us or 0.0)])
        if trace_path:
            prof.export_chrome_trace(trace_path)
        return events
    except Exception:  # a signal only
        return None
