"""Starting one process from the launcher: exactly the descriptors it is given and no other, its own session, its
cgroup, its Unix user with no way back (the bounding set emptied, no_new_privs), then exec. stdlib only.

The launcher is single-threaded, so the child may run Python between fork and exec.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import resource
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
LAST_CAP = 63


@dataclass(frozen=True)
class Identity:
    """Who a process runs as: its uid and gid and its supplementary groups (none but these)."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()


def prctl(option: int, value: int) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")


def become(identity: Identity | None) -> None:
    """Drop to `identity` for good (as root: every capability out of the bounding set first), then no_new_privs:
    nothing this process execs can gain a privilege back. None: stay who we are (no root here), no_new_privs still."""
    if identity is not None:
        for cap in range(LAST_CAP + 1):
            try:
                prctl(PR_CAPBSET_DROP, cap)
            except OSError as exc:
                if exc.errno != errno.EINVAL:  # past the kernel's last capability
                    raise
        os.setgroups(list(identity.groups))
        os.setresgid(identity.gid, identity.gid, identity.gid)
        os.setresuid(identity.uid, identity.uid, identity.uid)  # from root: every capability is cleared with it
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def fork_exec(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    fds: Sequence[int],
    cwd_fd: int,
    identity: Identity | None,
    cgroup_fds: Sequence[int] = (),
    rlimits: Mapping[int, int] = {},
    umask: int = 0o022,
) -> int:
    """Run `argv` in a child with `fds[i]` as its descriptor i (0, 1 and 2 included) and no other, in a session of
    its own, killed when the launcher dies, in the cgroups whose `cgroup.procs` are `cgroup_fds`, with `rlimits`
    raised or lowered while still root, as `identity`. Returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setsid()
        for fd in cgroup_fds:
            os.write(fd, b"0")  # this process into the group, before it runs anything of its own
        for which, value in rlimits.items():
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):  # raising a hard limit takes CAP_SYS_RESOURCE: some containers lack it
                hard = resource.getrlimit(which)[1]
                resource.setrlimit(which, (hard, hard))
        os.fchdir(cwd_fd)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1024 + i) for i, fd in enumerate(fds)]
        for target, fd in enumerate(high):
            os.dup2(fd, target)
        os.closerange(len(fds), 1 << 20)
        os.umask(umask)
        become(identity)
        os.execve(argv[0], list(argv), dict(env))
    except BaseException as exc:  # nothing may run on in a child of the launcher; its output says why
        with contextlib.suppress(BaseException):
            os.write(2, f"the launcher could not start {argv[0]}: {exc!r}\n".encode())
        os._exit(127)
    raise AssertionError("unreachable")


def wait_status(status: int) -> int:
    """A wait status as the runner reads it: the exit code, or minus the signal that ended the process."""
    return os.waitstatus_to_exitcode(status)
