"""The orchestrator's link to its launcher (launcher/evaluation.py): the few fixed requests it may make (wire.py)
and what comes back. stdlib only, no privilege.

The orchestrator asks for a worker pair and gets, per worker, the write end of its command pipe, the read ends of
its reply and output pipes and a pidfd (to see it end); it asks the launcher to kill a worker, to say how one ended,
to end a pair (and count what the kernel left running), to hand over the kernel's build folder (emptied or not) and
to pin both workers onto one CPU. It never holds a way to signal the kernel, to start a process, or to open a folder
the kernel can write by a path of its own choosing.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.harness.sandbox.cgroup import Cgroup
from evaluator.harness.sandbox.launcher import wire

FD_VAR = "KBV_LAUNCHER_FD"
ROLES = {"reference": 0, "candidate": 1}


class LauncherError(OSError):
    """The launcher refused a request or is gone."""


@dataclass(frozen=True)
class Setup:
    """What the launcher made of the evaluation (HELLO)."""

    mode: str  # the sandbox: "namespaces", "uid" or "none" (namespaces.py)
    reason: str  # why not a stronger one
    candidate: tuple[int, int] | None  # the kernel's uid and gid (None: the orchestrator's own)
    launcher_pid: int
    privileged: bool  # the launcher is root: the orchestrator a uid of its own
    mounted: bool  # the kernel's disks are sized filesystems
    disk_fd: int
    tmp_fd: int
    cache_fd: int | None
    limits: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Spawned:
    """One worker of a pair, from the orchestrator's side."""

    pid: int
    cmd_w: int
    rep_r: int
    log_r: int
    pidfd: int
    cgroup: Cgroup | None  # read only: its counters and its processes


@dataclass(frozen=True)
class Paired:
    reference: Spawned
    candidate: Spawned
    handover_fd: int | None  # the number both workers know their hand-over socket by
    cgroup: str  # how the kernel's processes are counted
    nproc: int


def cgroup_from(text: str) -> Cgroup | None:
    """The launcher's description of a cgroup ("v2:/sys/fs/cgroup/..." or "v1:/memory/...,/pids/..."), if any."""
    version, _, folders = text.partition(":")
    if version not in ("v1", "v2") or not folders:
        return None
    return Cgroup([Path(f) for f in folders.split(",")], int(version[1]))


class Link:
    """The orchestrator's socket to its launcher; one request at a time (the watchdog threads share it)."""

    def __init__(self, fd: int) -> None:
        self.sock = socket.socket(fileno=fd)
        self._lock = threading.Lock()

    @classmethod
    def from_environ(cls) -> Link:
        fd = os.environ.get(FD_VAR, "")
        if not fd.isdigit():
            raise LauncherError(f"no launcher ({FD_VAR}): the orchestrator is started by one (launching.py)")
        return cls(int(fd))

    def ask(self, kind: str, reply: str, **values: Any) -> wire.Message:
        with self._lock:
            wire.send(self.sock, kind, **values)
            try:
                message = wire.receive(self.sock, [reply, "REFUSED"])
            except wire.Malformed as exc:
                raise LauncherError(f"the launcher's answer to {kind}: {exc}") from exc
        if message is None:
            raise LauncherError("the launcher is gone")
        if message.kind == "REFUSED":
            raise LauncherError(f"the launcher refused {kind}: {message['reason']}")
        return message

    def hello(self) -> Setup:
        m = self.ask("HELLO", "SETUP")
        v = m.values
        candidate = (v["cand_uid"], v["cand_gid"]) if v["cand_uid"] >= 0 else None
        limits = {name: v[name] for name, _ in wire.LIMITS}
        cache = m.fds[2] if len(m.fds) > 2 else None
        return Setup(v["mode"], v["reason"], candidate, v["launcher_pid"], bool(v["privileged"]), bool(v["mounted"]),
                     m.fds[0], m.fds[1], cache, limits)  # fmt: skip

    def pair(self) -> Paired:
        m = self.ask("PAIR", "PAIRED")
        v, fds = m.values, m.fds
        ref = Spawned(v["ref_pid"], fds[0], fds[1], fds[2], fds[3], cgroup_from(v["ref_cgroup"]))
        cand = Spawned(v["cand_pid"], fds[4], fds[5], fds[6], fds[7], cgroup_from(v["cand_cgroup"]))
        handover = v["handover_fd"] if v["handover_fd"] >= 0 else None
        return Paired(ref, cand, handover, v["cgroup"], v["nproc"])

    def status(self, role: str) -> int | None:
        """How the worker ended (its exit code, or minus its signal), None while it runs."""
        m = self.ask("WAIT", "STATUS", role=ROLES[role])
        return m["status"] if m["exited"] else None

    def kill(self, role: str) -> None:
        self.ask("KILL", "DONE", role=ROLES[role])

    def end_pair(self) -> int:
        """Both workers ended with whatever they left running; how many of those were the kernel's."""
        return int(self.ask("END_PAIR", "STRAYS")["count"])

    def build(self, *, fresh: bool) -> int:
        """A descriptor of the kernel's build folder (emptied first when `fresh`); the caller closes it."""
        return self.ask("BUILD", "FD", fresh=int(fresh)).fds[0]

    def pin(self, cpu: int) -> dict[str, int]:
        m = self.ask("PIN", "PINNED", cpu=cpu)
        return {"reference": m["reference"], "candidate": m["candidate"]}

    def unpin(self) -> dict[str, int]:
        m = self.ask("UNPIN", "PINNED")
        return {"reference": m["reference"], "candidate": m["candidate"]}
