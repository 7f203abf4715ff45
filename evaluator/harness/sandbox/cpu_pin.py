"""Both workers of a CUDA evaluation are timed on one CPU of their own. stdlib only.

A launch-bound call (the GPU waits for the host to launch its next kernel) runs at the speed of the CPU that
launches it. On the H200 machine (a 16-vCPU VM) that speed changes by up to 2x from one moment and one vCPU to the
next: one process moved across the vCPUs timed MobileNetV2 (L3/20) at 3.2-7.2 ms, the same vCPU at both ends of
that range in different passes (benchmarks/results/process-pairs-h200.md). The two workers take turns (ABAB blocks)
and never run at once, so on one CPU they meet the same host, and the ratio cancels what two vCPUs cannot.

The timing CPUs are set aside: on a machine with enough CPUs, the highest one per GPU (timing_cpus) runs nothing of
ours but timed loops. Every CUDA evaluation's workers are kept on the rest (general_cpus); during its timed loops,
which the exclusive GPU hold makes one per GPU at a time, the orchestrator leases one timing CPU (an flock per CPU in
a machine-wide slots folder: the launcher's, shared by the orchestrators' group where root runs it; privileges.py),
and the launcher pins every thread of both workers' process groups onto it from outside (the orchestrator asks: the
kernel's threads are another user's) and moves them back after. So other evaluations' imports, compiles and
correctness calls never land on the CPU a launch-bound call is timed on (eight evaluations at once: one pair's
baseline process ran 50 % slow and read 2.0-2.5x). A kernel may move its own threads elsewhere again; that only
gives back the noise of an unpinned pair, and a kernel that crowds the baseline's CPU is caught by candidate_cpu.py.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from evaluator.harness.sandbox.privileges import lease_first_free, uid_slots_dir
from evaluator.harness.sandbox.usage import group_pids

CPU_SLOTS_VAR = "KBV_CPU_SLOTS_DIR"

# Below this many CPUs none is set aside: the machine needs every CPU for the evaluations themselves.
MIN_CPUS_TO_RESERVE = 4


def gpu_count() -> int:
    """NVIDIA GPUs on this machine (the driver's /proc entries; CUDA_VISIBLE_DEVICES does not hide them), at least 1."""
    try:
        return max(1, len(os.listdir("/proc/driver/nvidia/gpus")))
    except OSError:
        return 1


def timing_cpus(cpus: set[int] | None = None) -> list[int]:
    """The CPUs set aside for timed loops: the highest one per GPU, never the lowest (interrupts and housekeeping
    land there), none on a machine with fewer than MIN_CPUS_TO_RESERVE CPUs (then any CPU but the lowest may be
    leased, as before)."""
    ordered = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if len(ordered) < MIN_CPUS_TO_RESERVE:
        return ordered[1:]
    return ordered[-min(gpu_count(), len(ordered) // 2) :]


def general_cpus(cpus: set[int] | None = None) -> list[int]:
    """Every CPU but the timing ones (all of them on a small machine): where evaluations run outside timed loops."""
    ordered = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if len(ordered) < MIN_CPUS_TO_RESERVE:
        return ordered
    reserved = set(timing_cpus(set(ordered)))
    return [cpu for cpu in ordered if cpu not in reserved]


class CpuLease:
    """One CPU held (an flock on `cpu-N.lock`) until release(); None when every CPU but the lowest is taken."""

    def __init__(self, slots_dir: Path | None = None) -> None:
        shared = os.environ.get(CPU_SLOTS_VAR, "")  # the launcher's, shared by the orchestrators' group
        self.slots_dir = Path(slots_dir) if slots_dir is not None else Path(shared) if shared else uid_slots_dir()
        self.cpu: int | None = None
        self._fh: IO[str] | None = None

    def acquire(self, allowed: set[int] | None = None) -> int | None:
        """Lease one of `allowed` (default: any CPU but the lowest)."""
        cpus = sorted(allowed) if allowed is not None else sorted(os.sched_getaffinity(0))[1:]
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
