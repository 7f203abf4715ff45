"""The limits a worker process puts on itself before any untrusted code runs (called first thing in each worker's
`__main__`). stdlib only, so a worker is limited before it even imports torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def apply_limits(limits: dict[str, Any], *, dumpable: bool) -> None:
    """Limit this process before any untrusted code runs; soft and hard limits alike (cannot be raised back).

    RLIMIT_AS is deliberately not used: CUDA reserves huge virtual ranges. RLIMIT_DATA is used only on CPU;
    on CUDA the orchestrator's RSS watchdog enforces host memory instead.
    """
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # if the orchestrator (or the sandbox's init) dies, so do we
    if os.getppid() == 1 and not limits.get("pid_namespace"):  # in the sandbox, pid 1 is bwrap's init, our parent
        os._exit(70)
    if not dumpable:
        _prctl(PR_SET_DUMPABLE, 0)  # clean workers: same-user processes cannot ptrace us or open our /proc fds
    pairs = {
        "data_bytes": resource.RLIMIT_DATA,
        "fsize_bytes": resource.RLIMIT_FSIZE,
        "nproc": resource.RLIMIT_NPROC,
        "cpu_seconds": resource.RLIMIT_CPU,
    }
    for key, which in pairs.items():
        value = limits.get(key)
        if value:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (int(value), int(value)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
