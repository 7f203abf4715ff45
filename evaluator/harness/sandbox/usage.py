"""What a worker's processes use, read from /proc: which processes are its and their resident memory (the memory
watchdog of spawn.py; cpu_pin.py's pinning). stdlib only. What the kernel keeps on disk is disk.py's.
"""

from __future__ import annotations

import contextlib
import os

from evaluator.harness.sandbox.candidate_cpu import descendants


def group_pids(pgid: int) -> list[int]:
    """The processes of a process group (a worker and whatever it started without leaving its group)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
            if int(stat[stat.rindex(b")") + 2 :].split()[2]) == pgid:  # fields: state, ppid, pgrp, ...
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def tree_pids(root: int, uid: int | None = None) -> list[int]:
    """A worker's processes without a cgroup: its process tree (in a PID namespace, orphans stay in it), and every
    process of `uid` (an evaluation's own leased uid: processes that left the tree, setsid or not)."""
    found = {root, *descendants(root)}
    if uid is not None:
        for entry in os.scandir("/proc"):
            with contextlib.suppress(OSError):
                if entry.name.isdigit() and entry.stat().st_uid == uid:
                    found.add(int(entry.name))
    return sorted(found)


def pids_rss(pids: list[int]) -> int:
    """Resident bytes of these processes."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total
