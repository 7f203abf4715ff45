"""Process hardening that needs no torch: the orchestrator's undumpable state, the launcher's subreaper role and its
clean-up of what a kernel left running."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable

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


def process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def process_uid(pid: int) -> int | None:
    """The process's real uid, which only a privileged process can change (the owner of /proc/PID is not it: a
    process that makes itself undumpable shows as root's there)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def kill_adopted_children(
    is_kernels: Callable[[int], bool], rounds: int = 20, keep: frozenset[int] | set[int] = frozenset()
) -> int:
    """SIGKILL and reap every remaining child but those in `keep` (call after the workers are closed); returns how
    many of them `is_kernels` said were the kernel's (asked before the kill: a reaped pid leaves nothing to read)."""
    killed = 0
    for _ in range(rounds):
        children = [pid for pid in _children() if pid not in keep]
        if not children:
            break
        for pid in children:
            counted = is_kernels(pid)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
            killed += counted
        time.sleep(0.05)  # their own orphans are re-parented to us next
    return killed
