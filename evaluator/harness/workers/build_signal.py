"""The candidate worker's sign that the kernel is building code in its own process, for the orchestrator's step
bounds (orchestrator/build_watch.py). stdlib only; never imports candidate code.

A compiler that runs as a process of its own (nvcc, ninja, cc1plus, ptxas) is visible to the orchestrator in /proc.
Much of a build is not: torch.compile's tracing and lowering and Triton's compiler run inside the worker's Python
process, where only the worker can see them. So while the worker handles a step that may build (the load, a
correctness call, the timing set-up: never a timed call), one thread of its own samples the main thread's stack about
five times a second and names itself BUILDING (its /proc comm, which the orchestrator reads) while frames of a build
module are on it, and for HOLD_S after (a stack seen between two samples of a long build is still that build).

The kernel shares the process and could name a thread BUILDING itself, or spin inside a module that looks like a
builder: that buys it at most the build allowance (load_cold_timeout_s), which every first call had before this
signal existed. The thread is started before tamper_watch counts the worker's own threads, so it is never counted
as one the kernel started.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

BUILDING = "kbv-building"  # the watcher thread's name while a build runs (15 characters at most: the kernel's limit)
IDLE = "kbv-watch"
# Modules whose frames on the main thread mean a build in progress: torch.compile (dynamo's tracing, AOT autograd,
# inductor's lowering and code generation), load_inline/load, Triton's compiler and autotuner. Not Triton's launcher
# (triton.runtime.jit runs on every call) nor dynamo's wrapper of an already compiled function (eval_frame).
BUILD_MODULES = (
    "torch._dynamo.convert_frame",
    "torch._dynamo.symbolic_convert",
    "torch._dynamo.output_graph",
    "torch._functorch",
    "torch._inductor",
    "torch.utils.cpp_extension",
    "triton.compiler",
    "triton.backends",
    "triton.runtime.autotuner",
    "triton.runtime.build",
)
SAMPLE_S = 0.2
HOLD_S = 1.0
PR_SET_NAME = 15

_current_frames = sys._current_frames
_sleep = time.sleep
_monotonic = time.monotonic


def _name_this_thread(name: str) -> None:
    """The calling thread's kernel-level name (/proc/self/task/TID/comm), by prctl; nothing where that fails."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def building_frames(frame: FrameType | None) -> bool:
    """True when any frame of the stack from `frame` down belongs to a build module."""
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if isinstance(module, str) and module.startswith(BUILD_MODULES):
            return True
        frame = frame.f_back
    return False


class BuildWatch:
    """The watcher thread: blocked (no CPU, no GIL) except while `watching()` a step of the main thread."""

    def __init__(self) -> None:
        self._on = threading.Event()
        self._main = threading.main_thread().ident
        self.thread = threading.Thread(target=self._run, name="kbv-build-watch", daemon=True)

    def start(self) -> None:
        self.thread.start()

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        self._on.set()
        try:
            yield
        finally:
            self._on.clear()

    def _run(self) -> None:
        _name_this_thread(IDLE)
        while True:
            self._on.wait()
            named, last_seen = False, float("-inf")
            while self._on.is_set():
                now = _monotonic()
                if building_frames(_current_frames().get(self._main or 0)):
                    last_seen = now
                build = now - last_seen < HOLD_S
                if build != named:
                    _name_this_thread(BUILDING if build else IDLE)
                    named = build
                _sleep(SAMPLE_S)
            if named:
                _name_this_thread(IDLE)


WATCH = BuildWatch()


def watched(handler: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A worker command handler during which WATCH samples the main thread (steps that may build)."""

    def run(msg: dict[str, Any]) -> dict[str, Any]:
        with WATCH.watching():
            return handler(msg)

    return run
