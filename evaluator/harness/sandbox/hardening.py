"""Process hardening that needs no torch (used by the orchestrator)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def make_undumpable() -> None:
    """Other processes of the same user can no longer ptrace this one or open its fds through /proc."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def become_subreaper() -> None:
    """Orphans among our descendants (a kernel's double-forked, setsid'd children, which escape the workers' process
    groups) are re-parented to this process instead of init, so kill_adopted_children() can still find them."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    stat = fh.read()
                if int(stat[stat.rindex(b")") + 2 :].split()[1]) == me:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def kill_adopted_children(rounds: int = 20, *, ignore: frozenset[str] = frozenset()) -> int:
    """SIGKILL and reap every remaining child (call after the workers are closed); returns how many there were,
    not counting those whose command name is in `ignore` (bubblewrap's own processes, re-parented to us when the
    sandbox's outer process dies first: a kernel's processes cannot leave its PID namespace)."""
    killed = 0
    for _ in range(rounds):
        children = _children()
        if not children:
            break
        for pid in children:
            counted = _comm(pid) not in ignore  # read before the kill: a reaped pid has no name
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
            killed += counted
        time.sleep(0.05)  # their own orphans are re-parented to us next
    return killed
