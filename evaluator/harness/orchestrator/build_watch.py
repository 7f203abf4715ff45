"""A first call bounded by what it does: the long build allowance only while the kernel is seen compiling.

A candidate step that may build (the load, and each worker process's first forward and timing set-up: load_inline,
Triton and torch.compile build there) has a bound of its own, like any step (clients.StepBound), and a clock that
stops while the kernel is seen building: the time seen building is added to its bound, up to the build ceiling
(load_cold_timeout_s) from the step's start. A first forward that spins without compiling therefore ends at the
normal hang cap (seconds beyond the reference's own first call), not after the build allowance.

Building is seen in two ways, read from /proc about every 0.5 s while the step runs (sandbox/spawn.Worker.request):
a compiler among the candidate worker's processes (its cgroup's, else its process tree and leased uid's: names
below), or the worker's watcher thread named workers/build_signal.BUILDING (a build inside the worker's own Python
process: torch.compile's tracing and lowering, Triton's compiler). Either can be forged by the kernel (a thread or
a copy of a binary with a compiler's name), which buys it the ceiling at most: what every first call had before.

stdlib only, like the orchestrator.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# /proc/PID/comm of compilers, assemblers, linkers and build drivers (comm keeps 15 characters: a cross compiler's
# "x86_64-linux-gnu-g++" reads "x86_64-linux-gn").
COMPILERS = frozenset(
    {
        "nvcc",
        "cicc",
        "ptxas",
        "fatbinary",
        "nvlink",
        "cudafe++",
        "cc1plus",
        "cc1",
        "lto1",
        "gcc",
        "g++",
        "c++",
        "cc",
        "clang",
        "clang++",
        "ld",
        "ld.gold",
        "ld.lld",
        "ld.bfd",
        "collect2",
        "as",
        "ninja",
        "make",
        "cmake",
        "hipcc",
        "x86_64-linux-gn",
        "aarch64-linux-g",
    }
)
BUILDING_THREAD = "kbv-building"  # workers/build_signal.BUILDING (the orchestrator never imports the workers)


def _comm(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(64).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def building(pids: Iterable[int]) -> str | None:
    """What shows a build running among these processes now: a compiler's name, or "build in the worker" when one
    of their threads is the candidate worker's watcher naming a build; None when nothing does."""
    for pid in pids:
        name = _comm(f"/proc/{pid}/comm")
        if name in COMPILERS:
            return name
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        if len(tids) > 1 and any(_comm(f"/proc/{pid}/task/{tid}/comm") == BUILDING_THREAD for tid in tids):
            return "a build in the worker's process (torch.compile, Triton, load_inline)"
    return None


@dataclass(frozen=True)
class StepBound:
    """How long one candidate step may take: `own_s` of its own (None: only the evaluation's deadline), and, when it
    `may_build`, also the time it is seen building, up to the build ceiling from its start. `why` says where own_s
    comes from (the error message)."""

    own_s: float | None
    may_build: bool = False
    why: str = ""


class BuildAllowance:
    """One step's deadline, pushed back by the time the step is seen building (`probe`: `building` of the worker's
    processes), never past `ceiling_s` from its start nor past `hard_end` (the evaluation's own deadline)."""

    def __init__(
        self,
        probe: Callable[[], str | None],
        *,
        ceiling_s: float,
        hard_end: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.probe = probe
        self.clock = clock
        self.last = clock()
        self.end = min(self.last + ceiling_s, hard_end)
        self.built_s = 0.0  # seconds added to the step's bound
        self.seen = ""  # the first sign of a build, for the record's error
        self.capped = False  # the build ran into the ceiling

    def extend(self, deadline: float) -> float:
        """The step's deadline, moved by the time since the last call when a build is seen now (Worker.request calls
        this about every 0.5 s while it waits)."""
        now = self.clock()
        elapsed, self.last = now - self.last, now
        with contextlib.suppress(OSError, AssertionError):
            what = self.probe()
            if what:
                self.seen = self.seen or what
                moved = max(deadline, min(deadline + elapsed, self.end))
                self.capped = self.capped or moved < deadline + elapsed
                self.built_s += moved - deadline
                return moved
        return deadline
