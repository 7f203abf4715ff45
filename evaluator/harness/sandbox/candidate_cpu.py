"""The kernel's CPU time while the baseline is timed, read by the orchestrator from /proc. stdlib only.

The two workers take turns: while the baseline's block runs, the candidate worker waits for its next command and
has no work to do. A kernel that spends CPU then (a thread, or a child process, spinning while it is not called)
takes CPU from the baseline: on a launch-bound problem, whose speed is the host's, that slows the baseline and
inflates the speedup, and more so when both workers share one CPU (cpu_pin.py). The kernel's own report of its
threads (tamper_watch) is evidence it could forge; this is the orchestrator's count, from the kernel's processes'
accounting in /proc: user and system time, plus that of their children once reaped.

The kernel's processes are found as a tree, not by group or user: every process below the evaluation's launcher but
the reference worker and the orchestrator. A child that calls setsid stays in the tree, and one whose parent exits
is adopted by the launcher (a subreaper, hardening.py) or by the sandbox's init, both inside it. A process that
exits unreaped between two reads takes its time with it; one that outlives the worker fails process containment
anyway.
"""

from __future__ import annotations

import os

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
# A kernel whose processes used more than BUSY_LIMIT of the baseline's timed wall time (and more than BUSY_MIN_MS
# over the phase: three of the accounting's 10 ms ticks) worked while it was not called: timer integrity
# fails. An idle worker blocked on its pipe uses none; an OpenMP pool spinning down after a CPU call, a little.
BUSY_LIMIT = 0.10
BUSY_MIN_MS = 30.0


def _cpu_ms(pid: int) -> float | None:
    """utime + stime + cutime + cstime of a process, in ms (None: gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()  # fields[0] is the state, field 14 of stat is fields[11]
        return sum(int(x) for x in fields[11:15]) * 1000.0 / TICKS_PER_S
    except (OSError, ValueError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    """A process's children, from every one of its threads (/proc/PID/task/TID/children)."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                found += [int(x) for x in fh.read().split()]
        except (OSError, ValueError):
            continue
    return found


def descendants(root: int, *, exclude: int | tuple[int, ...] | None = None) -> list[int]:
    """Every process below `root` (its children's children too), without the `exclude` subtrees; no scan of /proc."""
    skip = exclude if isinstance(exclude, tuple) else (exclude,)
    found: list[int] = []
    todo = [c for c in _children(root) if c not in skip]
    while todo and len(found) < 100_000:
        pid = todo.pop()
        found.append(pid)
        todo += _children(pid)
    return found


class CandidateCpu:
    """Snapshots of the CPU time of every process below `parent` (the launcher: the workers are its children, and as
    a subreaper it adopts whatever a kernel orphans) except the `exclude` subtrees (the reference worker and the
    orchestrator)."""

    def __init__(self, parent: int, exclude: int | tuple[int, ...] | None = None) -> None:
        self.parent = parent
        self.exclude = exclude

    def _pids(self) -> list[int]:
        return descendants(self.parent, exclude=self.exclude)

    def snapshot(self) -> dict[int, float]:
        """pid -> its CPU ms so far, for every candidate process alive now."""
        snap = {}
        for pid in self._pids():
            ms = _cpu_ms(pid)
            if ms is not None:
                snap[pid] = ms
        return snap


def used_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU ms the candidate's processes used between two snapshots. A process new in `after` started in between,
    so all of its time counts; a process gone from `after` is not counted (see the module's note)."""
    return sum(max(0.0, ms - before.get(pid, 0.0)) for pid, ms in after.items())


def busy_finding(cpu_ms: float, wall_ms: float) -> str:
    """The timer-integrity finding when the candidate was busy while the baseline was timed, else ""."""
    if wall_ms <= 0 or cpu_ms <= BUSY_MIN_MS or cpu_ms <= BUSY_LIMIT * wall_ms:
        return ""
    return (
        f"the kernel's processes used {cpu_ms:.0f} ms of CPU while the baseline was timed "
        f"({100 * cpu_ms / wall_ms:.0f} % of its {wall_ms:.0f} ms; at most {100 * BUSY_LIMIT:.0f} %): "
        "work done while not called slows the baseline"
    )
