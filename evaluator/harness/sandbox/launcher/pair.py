"""A worker pair, as the launcher starts and ends it: the reference worker as the orchestrator's uid, the candidate
as the kernel's in its bubblewrap sandbox, each in a cgroup and a session of its own. The orchestrator gets each
worker's pipe ends and a pidfd (SCM_RIGHTS); it never gets a way to signal the kernel or to start anything. stdlib
only.

Descriptors in a worker: 0 /dev/null, 1 and 2 its output (a pipe the orchestrator drains), 3 commands, 4 replies,
5 the output hand-over socket (CUDA: the two workers' ends of one socket pair, cuda_fd.py).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from evaluator.harness.environ import worker_env
from evaluator.harness.sandbox.cgroup import Cgroup
from evaluator.harness.sandbox.cpu_pin import pin_group
from evaluator.harness.sandbox.hardening import kill_adopted_children, process_name, process_uid
from evaluator.harness.sandbox.launcher.process import Identity, fork_exec
from evaluator.harness.sandbox.namespaces import Plan
from evaluator.harness.sandbox.usage import tree_pids


class Evaluation(Protocol):
    """What a pair needs of its evaluation's launcher (evaluation.py)."""

    python: str
    cuda: bool
    memory: int
    fsize: int
    cpu_seconds: int
    env: dict[str, str]
    paths: dict[str, str]
    kernel: Identity | None
    orchestrator: Identity | None
    leased: bool
    plan: Plan | None
    reaped: dict[int, int]

    def reap(self) -> None: ...


ROLES = ("reference", "candidate")
CGROUP_PIDS = 8192  # tasks (threads count) in one worker's cgroup: torch starts a few dozen per process
HANDOVER_FD = 5


def threads_of(uid: int) -> int:
    """Threads `uid` runs now: RLIMIT_NPROC counts them all, so a worker's limit is on top of these."""
    count = 0
    for entry in os.scandir("/proc"):
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


@dataclass
class Worker:
    role: str
    pid: int
    cgroup: Cgroup | None
    uid: int | None  # a uid of this evaluation's own (its processes can be found by it), else None
    status: int | None = None


@dataclass
class Pair:
    ev: Evaluation
    number: int
    workers: list[Worker] = field(default_factory=list)
    cgroup_reason: str = "no memory limit"

    def start(self) -> tuple[dict[str, object], list[int]]:
        """Both workers; the PAIRED reply's values and the descriptors for the orchestrator (per worker: its
        command pipe's write end, its reply and output pipes' read ends, its pidfd)."""
        ev = self.ev
        handover = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) if ev.cuda else None
        theirs: list[int] = []
        values: dict[str, object] = {"handover_fd": HANDOVER_FD if handover else -1, "cgroup": ""}
        try:
            for index, (role, key) in enumerate(zip(ROLES, ("ref", "cand"), strict=True)):
                sock = handover[1 - index].fileno() if handover else None  # the candidate's end is handover[0]
                worker, fds, nproc = self._spawn(role, sock)
                self.workers.append(worker)
                theirs += fds
                values[f"{key}_pid"], values[f"{key}_cgroup"], values["nproc"] = (
                    worker.pid,
                    _describe(worker.cgroup),
                    nproc,
                )
        finally:
            for end in handover or ():
                end.close()
        values["cgroup"] = self.cgroup_reason  # the candidate's: how the kernel's processes are counted
        return values, theirs

    def _spawn(self, role: str, handover: int | None) -> tuple[Worker, list[int], int]:
        ev = self.ev
        candidate = role == "candidate"
        identity = ev.kernel if candidate else ev.orchestrator
        cgroup, self.cgroup_reason = Cgroup.make(
            f"{os.getpid()}-{self.number}-{role}", memory_bytes=ev.memory, pids=CGROUP_PIDS
        )
        folder = Path(ev.paths["candidate" if candidate else "reference"])
        nproc = threads_of(identity.uid if identity else os.getuid()) + 4096
        limits = (
            f'{{"fsize_bytes": {ev.fsize}, "nproc": {nproc}, "data_bytes": {0 if ev.cuda else ev.memory}, '
            f'"cpu_seconds": {ev.cpu_seconds}, "pid_namespace": {"true" if candidate and ev.plan else "false"}}}'
        )
        argv = [ev.python, "-m", f"evaluator.harness.workers.{role}_worker", "3", "4", limits]
        env = worker_env(private_dir=folder, base=ev.env)
        if candidate and ev.plan is not None:
            argv = ev.plan.wrap(argv)
            env.update(USER="kernel", LOGNAME="kernel")
        cmd_r, cmd_w = os.pipe()
        rep_r, rep_w = os.pipe()
        log_r, log_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        cwd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            if cgroup is not None:
                cgroup.open_for_child()
            pid = fork_exec(
                argv,
                env,
                fds=[devnull, log_w, log_w, cmd_r, rep_w, *([handover] if handover is not None else [])],
                cwd_fd=cwd,
                identity=identity,
                cgroup_fds=cgroup._enter_fds if cgroup is not None else (),
                # the reference pins host memory for CUDA as root's CAP_IPC_LOCK once let it
                rlimits={} if candidate else {resource.RLIMIT_MEMLOCK: resource.RLIM_INFINITY},
            )
        finally:
            if cgroup is not None:
                cgroup.close_for_child()
            for fd in (cmd_r, rep_w, log_w, devnull, cwd):
                os.close(fd)
        leased = identity.uid if identity is not None and candidate and ev.leased else None
        return Worker(role, pid, cgroup, leased), [cmd_w, rep_r, log_r, os.pidfd_open(pid)], nproc

    def status(self, role: int) -> tuple[int, int]:
        """(1, its exit code or minus its signal) once the worker has ended and been reaped, else (0, -1)."""
        worker = self.workers[role]
        if worker.status is None:
            self.ev.reap()
            worker.status = self.ev.reaped.get(worker.pid)
        return (0, -1) if worker.status is None else (1, os.waitstatus_to_exitcode(worker.status))

    def kill(self, role: int) -> None:
        """SIGKILL the worker's process group and every other process of its own (cgroup, else tree and uid)."""
        worker = self.workers[role]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker.pid, signal.SIGKILL)
        if worker.cgroup is not None:
            worker.cgroup.kill()
            return
        for pid in tree_pids(worker.pid, worker.uid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def end(self, keep: set[int]) -> int:
        """Both workers and whatever they left running killed and reaped, their cgroups removed; returns how many of
        the processes left were the kernel's (process containment). `keep`: children that are not the pair's."""
        is_kernels = self._kernels_orphan()
        for role in range(len(self.workers)):
            self.kill(role)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(self.status(r)[0] == 0 for r in range(len(self.workers))):
            self.ev.reap()
            time.sleep(0.02)
        stray = kill_adopted_children(is_kernels, keep=keep)
        for worker in self.workers:
            if worker.cgroup is not None:
                worker.cgroup.remove()
        return stray

    def _kernels_orphan(self) -> Callable[[int], bool]:
        """Which orphan adopted after the workers end was the kernel's: bubblewrap's own processes are not; with a
        uid of its own the kernel's are that uid's; without one, what was not in the reference worker's tree."""
        bwrap = self.ev.plan is not None
        uid = self.ev.kernel.uid if self.ev.kernel is not None else None
        ref = self.workers[0].pid if self.workers else None
        ours = frozenset(tree_pids(ref)) if ref and uid is None else frozenset()

        def is_kernels(pid: int) -> bool:
            if bwrap and process_name(pid) == "bwrap":
                return False
            return process_uid(pid) == uid if uid is not None else pid not in ours

        return is_kernels

    def pin(self, cpus: set[int]) -> tuple[int, int]:
        """Every thread of both workers' groups onto `cpus` (cpu_pin.py)."""
        return pin_group(self.workers[0].pid, cpus), pin_group(self.workers[1].pid, cpus)


def _describe(cgroup: Cgroup | None) -> str:
    """The orchestrator reads a cgroup's counters (never writes them): its version and folders."""
    return "" if cgroup is None else f"v{cgroup.version}:" + ",".join(str(f) for f in cgroup.folders)
