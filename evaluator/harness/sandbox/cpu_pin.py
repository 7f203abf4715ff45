"""Both workers of a CUDA evaluation are timed on one CPU of their own. stdlib only.

A launch-bound call (the GPU waits for the host to launch its next kernel) runs at the speed of the CPU that
launches it. On the H200 machine (a 16-vCPU VM) that speed changes by up to 2x from one moment and one vCPU to the
next: one process moved across the vCPUs timed MobileNetV2 (L3/20) at 3.2-7.2 ms, the same vCPU at both ends of
that range in different passes (benchmarks/results/process-pairs-h200.md). The two workers take turns (ABAB blocks)
and never run at once, so on one CPU they meet the same host, and the ratio cancels what two vCPUs cannot.

The CPU is leased for the timing phase (an flock per CPU in a machine-wide slots folder: the launcher's, shared by
the orchestrators' group where root runs it; privileges.py), so two evaluations timing on different GPUs of one
machine never share one. The lowest CPU is never leased: interrupts and housekeeping land there. The launcher pins
every thread of both workers' process groups from outside (the orchestrator asks: the kernel's threads are another
user's), after timing set-up (compilation and warm-up keep every CPU). A kernel may move its own threads elsewhere
again; that only gives back the noise of an unpinned pair, and a kernel that crowds the baseline's CPU is caught by
candidate_cpu.py.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from evaluator.harness.sandbox.privileges import lease_first_free, uid_slots_dir
from evaluator.harness.sandbox.usage import group_pids

CPU_SLOTS_VAR = "KBV_CPU_SLOTS_DIR"


class CpuLease:
    """One CPU held (an flock on `cpu-N.lock`) until release(); None when every CPU but the lowest is taken."""

    def __init__(self, slots_dir: Path | None = None) -> None:
        shared = os.environ.get(CPU_SLOTS_VAR, "")  # the launcher's, shared by the orchestrators' group
        self.slots_dir = Path(slots_dir) if slots_dir is not None else Path(shared) if shared else uid_slots_dir()
        self.cpu: int | None = None
        self._fh: IO[str] | None = None

    def acquire(self, allowed: set[int] | None = None) -> int | None:
        cpus = sorted(allowed if allowed is not None else os.sched_getaffinity(0))[1:]
        got = lease_first_free(self.slots_dir, [f"cpu-{cpu}.lock" for cpu in cpus]) if cpus else None
        if got is not None:
            self._fh, index = got
            self.cpu = cpus[index]
        return self.cpu

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing drops the flock
        self._fh, self.cpu = None, None


def pin_group(pgid: int, cpus: set[int]) -> int:
    """Every thread of every process in the group onto `cpus`; returns how many threads were pinned. Threads that
    end meanwhile, or that the kernel's user namespace keeps from us, are skipped: the count says what took."""
    pinned = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(tid), cpus)
                    pinned += 1
    return pinned
