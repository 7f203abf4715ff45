"""The candidate worker's evidence of tampering (A4 timer tampering, C1 checker patching): timer and checker
functions, and the harness's own worker-side functions, captured when this module is imported (candidate_worker.py
imports it before any kernel code exists) and compared when asked; and the threads a kernel left running.

A kernel runs in the same process and could patch this module too: what it reports is evidence, and the
orchestrator's own clock remains the real guard. torch only (and tqdm's monitor switch, where tqdm is
installed); never imports candidate code.
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import sys
import threading
import time
from typing import Any

import torch
import torch.testing

from evaluator.harness import timing
from evaluator.harness.sandbox import limits
from evaluator.harness.workers import aliasing, build_signal, command_loop, device, inputs, l2, lead

WATCHED = (
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.time",
    "time.monotonic",
    "torch.cuda.Event",
    "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time",
    "torch.cuda.synchronize",
    "torch.cuda.max_memory_allocated",
    "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.memory_allocated",
    "torch.allclose",
    "torch.equal",
    "torch.isclose",
    "torch.testing.assert_close",
    "torch.save",
    "torch.load",
    "torch.Tensor",
    "torch.Tensor.untyped_storage",
    "torch.Tensor.clone",
    "torch.manual_seed",
    "builtins.type",
    "builtins.isinstance",
)
_ROOTS = {"time": time, "torch": torch, "builtins": builtins}


def _resolve(dotted: str) -> Any:
    head, *rest = dotted.split(".")
    obj: Any = _ROOTS[head]
    for part in rest:
        obj = getattr(obj, part)
    return obj


_CAPTURED = tuple((name, _resolve(name)) for name in WATCHED)
_listdir = os.listdir


def _no_progress_bar_monitor() -> None:
    """tqdm's first progress bar starts a monitor thread (`tqdm_monitor`) that lives on; torch.compile's inductor
    draws such bars while it compiles on CUDA, so an honest torch.compile kernel was rejected for a thread it never
    started (thread_count, on an H100). The monitor is switched off before any kernel code runs, so library bars
    start no thread, and every thread still alive is one the kernel's code started. tqdm is imported only where it
    is installed (torch does not need it); a kernel that turns the monitor back on starts that thread itself."""
    if importlib.util.find_spec("tqdm") is None:
        return
    import tqdm.std

    tqdm.std.tqdm.monitor_interval = 0


_no_progress_bar_monitor()
# The worker's own threads are those alive now: its build watcher (build_signal.py) is started first.
build_signal.WATCH.start()
THREADS_AT_START = frozenset(t.ident for t in threading.enumerate())
NATIVE_AT_START = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None


def replaced_functions() -> list[str]:
    """The watched and harness functions that are no longer what they were at import."""
    tampered = []
    for name, original in _CAPTURED:
        try:
            current = _resolve(name)
        except AttributeError:
            current = None
        if current is not original and not _torch_own_rebinding(name, original, current):
            tampered.append(name)
    for label, module, name, original in _HARNESS_FUNCS:
        if vars(module).get(name) is not original:
            tampered.append(label)
    return tampered


def _torch_own_rebinding(name: str, original: Any, current: Any) -> bool:
    """torch._dynamo's first import (torch.compile, and torch.profiler, which the harness itself runs for "what ran")
    rebinds `torch.manual_seed` to `torch._disable_dynamo(<the same function>)`: torch's own patch, not the kernel's.
    Accepted only when the wrapper is that function's code with the original in its `fn` cell, so a look-alike that
    calls something else is still tampering."""
    if name != "torch.manual_seed" or "torch._dynamo" not in sys.modules:
        return False
    wrapper_code = torch._disable_dynamo(original).__code__
    if getattr(current, "__code__", None) is not wrapper_code:
        return False
    cells = dict(zip(wrapper_code.co_freevars, current.__closure__ or (), strict=False))
    return "fn" in cells and cells["fn"].cell_contents is original


def new_threads() -> tuple[list[str], int | None]:
    """Python threads started since import and still alive, and the native thread count now."""
    threads = [t.name for t in threading.enumerate() if t.ident not in THREADS_AT_START and t.is_alive()]
    native = len(_listdir("/proc/self/task")) if NATIVE_AT_START is not None else None
    return threads, native


# The harness modules whose functions the candidate worker calls while the kernel is loaded, and this one (last, so
# that its own functions exist): replacing any of them in its module is tampering too.
_HARNESS_FUNCS = tuple(
    (f"{mod.__name__}.{name}", mod, name, value)
    for mod in (timing, aliasing, build_signal, command_loop, device, inputs, l2, lead, limits, sys.modules[__name__])
    for name, value in vars(mod).items()
    if callable(value)
) + tuple(  # the flush and the launch lead run before every timed call: their methods too
    (f"{cls.__module__}.{cls.__name__}.{name}", cls, name, value)
    for cls in (l2.L2Flusher, lead.LaunchLead, build_signal.BuildWatch)
    for name, value in vars(cls).items()
    if callable(value)
)
