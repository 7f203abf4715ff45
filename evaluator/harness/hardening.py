"""Process hardening that needs no torch (used by the orchestrator)."""

from __future__ import annotations

import contextlib
import ctypes

PR_SET_DUMPABLE = 4


def make_undumpable() -> None:
    """Other processes of the same user can no longer ptrace this one or open its fds through /proc."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
