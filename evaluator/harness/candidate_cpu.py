"""The kernel's CPU time while the baseline is timed, read by the orchestrator from /proc. stdlib only.

The two workers take turns: while the baseline's block runs, the candidate worker waits for its next command and
has no work to do. A kernel that spends CPU then (a thread, or a child process, spinning while it is not called)
takes CPU from the baseline: on a launch-bound problem, whose speed is the host's, that slows the baseline and
inflates the speedup, and more so when both workers share one CPU (cpu_pin.py). The kernel's own report of its
threads (tamper_watch) is evidence it could forge; this is the orchestrator's count, from the kernel's processes'
accounting in /proc: user and system time, plus that of their children once reaped.

The kernel's processes are its Unix user's when it has one (privileges.py), else the worker's process group and
the worker's descendants (a child that leaves the group with setsid is still in the tree). A process that exits
unreaped between two reads takes its time with it; one that outlives the worker fails process containment anyway.
"""

from __future__ import annotations

import os

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
# A kernel whose processes used more than BUSY_LIMIT of the baseline's timed wall time (and at least BUSY_MIN_MS
# over the phase, above the 10 ms granularity of the accounting) worked while it was not called: timer integrity
# fails. An idle worker blocked on its pipe uses none; an OpenMP pool spinning down after a CPU call, a little.
BUSY_LIMIT = 0.10
BUSY_MIN_MS = 50.0


def _cpu_ms(pid: int) -> float | None:
    """utime + stime + cutime + cstime of a process, in ms (None: gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()  # fields[0] is the state, field 14 of stat is fields[11]
        return sum(int(x) for x in fields[11:15]) * 1000.0 / TICKS_PER_S
    except (OSError, ValueError, IndexError):
        return None


class CandidateCpu:
    """Snapshots of the CPU time of the candidate's processes: `uid` when it runs as a user of its own, else the
    process group `pgid`."""

    def __init__(self, pgid: int, uid: int | None) -> None:
        self.pgid = pgid
        self.uid = uid

    def _pids(self) -> list[int]:
        by_uid, parents, groups = [], {}, {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            try:
                if self.uid is not None:  # status, not the folder's owner: a non-dumpable process's is root
                    with open(f"/proc/{pid}/status", "rb") as fh:
                        uid_line = next((line for line in fh if line.startswith(b"Uid:")), b"Uid: -1")
                    if int(uid_line.split()[1]) == self.uid:
                        by_uid.append(pid)
                    continue
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    stat = fh.read()
                fields = stat[stat.rindex(b")") + 2 :].split()  # state, ppid, pgrp, ...
                parents[pid], groups[pid] = int(fields[1]), int(fields[2])
            except (OSError, ValueError, IndexError):
                continue
        if self.uid is not None:
            return by_uid
        # no user of its own: the worker's group and every descendant of the worker (a child that calls setsid
        # leaves the group, not the tree)
        found = {pid for pid, group in groups.items() if group == self.pgid}
        for pid in parents:
            chain: list[int] = []
            cur = pid
            while cur in parents and cur not in found and cur not in chain and len(chain) < 64:
                chain.append(cur)
                cur = parents[cur]
            if cur in found:
                found.update(chain)
        return sorted(found)

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
    if wall_ms <= 0 or cpu_ms < BUSY_MIN_MS or cpu_ms <= BUSY_LIMIT * wall_ms:
        return ""
    return (
        f"the kernel's processes used {cpu_ms:.0f} ms of CPU while the baseline was timed "
        f"({100 * cpu_ms / wall_ms:.0f} % of its {wall_ms:.0f} ms; at most {100 * BUSY_LIMIT:.0f} %): "
        "work done while not called slows the baseline"
    )
