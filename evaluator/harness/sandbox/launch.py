"""An evaluation's two worker processes, from the orchestrator's side: asked of the launcher (link.py) and driven
through the pipe ends it hands over (spawn.py). The launcher holds what needs privilege (the uids, the namespaces
and the kernel's disks, the cgroups, killing and pinning); this module holds none.

Nothing here depends on the problem or the kernel, so a standby harness does all of it before either is known.
stdlib only, like the orchestrator.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.protocol import Options, Spec
from evaluator.harness.sandbox.candidate_cpu import CandidateCpu
from evaluator.harness.sandbox.disk import TMP_DISK, WORK_DISK, DiskCaps
from evaluator.harness.sandbox.disk_watch import DiskWatch
from evaluator.harness.sandbox.link import LauncherError, Link, Setup
from evaluator.harness.sandbox.privileges import UID_BASE, UID_SLOTS, Identity
from evaluator.harness.sandbox.spawn import Worker


@dataclass(frozen=True)
class Folders:
    """An evaluation's work folder and the private folders inside it (the launcher makes them: launcher/layout.py).
    Everything the kernel can write is on its disks (disk.py): `disk` (its folder, io/ and build/) and `tmp` (its
    /tmp, /var/tmp and /dev/shm)."""

    work: Path
    ref: Path  # the reference worker's; the kernel may not enter it
    disk: Path  # the kernel's work disk (a sized filesystem where root runs the launcher); its root is not the kernel's
    cand: Path  # the kernel's own
    io: Path  # outputs on their way to the reference (file hand-over)
    handoff: Path  # files written by the clean side for the kernel to read (kernel, init, params), never to write
    build: Path  # the kernel's extension builds: its to fill, but in a folder of ours, so never swapped for a link
    tmp: Path  # the kernel's tmp disk

    @classmethod
    def under(cls, work: Path) -> Folders:
        disk = work / WORK_DISK
        return cls(
            work=work,
            ref=work / "reference",
            disk=disk,
            cand=disk / "candidate",
            io=disk / "io",
            handoff=work / "handoff",
            build=disk / "build",
            tmp=work / TMP_DISK,
        )

    @property
    def kernel_file(self) -> Path:
        return self.handoff / "kernel.py"

    @property
    def init_file(self) -> Path:  # the reference's initial state, written by the reference worker
        return self.handoff / "init.pt"


class Workers:
    """The reference and candidate worker processes of one evaluation, through the launcher."""

    def __init__(self, folders: Folders, spec: Spec, opts: Options) -> None:
        self.folders = folders
        self.spec = spec
        self.opts = opts
        self.cuda = spec.device.startswith("cuda")
        self.ref: Worker | None = None
        self.cand: Worker | None = None
        self.ident: Identity | None = None  # the candidate's Unix user (None: ours)
        self.sandbox = "none"  # "namespaces", "uid" or "none" (namespaces.py)
        self.sandbox_reason: str | None = None  # why that mode (namespaces.choose_mode)
        self.fd_socks: tuple[int, int] | None = None  # cuda_fd hand-over: the socket's number in (candidate, ref)
        self.memory = 0
        self.limits: dict[str, Any] = {}
        self.disk: DiskWatch | None = None
        self.link: Link | None = None
        self.setup: Setup | None = None

    def start(self, emit: Callable[[dict[str, Any]], None]) -> None:
        """What the launcher made of the evaluation, then both worker processes (they import torch side by side).
        A failure part-way leaves what was made for stop() to undo."""
        try:
            self.link = Link.from_environ()
            self.setup = setup = self.link.hello()
        except LauncherError as exc:
            raise HarnessInfraError(str(exc)) from exc
        self.ident, self.sandbox = setup.candidate, setup.mode
        self.sandbox_reason = setup.reason or None
        self.memory = setup.limits["memory"]
        self.limits = {
            "fsize_bytes": setup.limits["fsize"],
            "data_bytes": 0 if self.cuda else self.memory,  # RLIMIT_DATA only on CPU; CUDA relies on the watchdog
            "cpu_seconds": setup.limits["cpu_seconds"],
        }
        caps = DiskCaps(*(setup.limits[k] for k in ("work_bytes", "work_files", "tmp_bytes", "tmp_files")))
        self.disk = DiskWatch(setup.disk_fd, setup.tmp_fd, caps, mounted=setup.mounted)
        self.limits["disk"] = self.disk.report()  # for the record: the caps and what holds them
        self._spawn(emit)

    def _spawn(self, emit: Callable[[dict[str, Any]], None]) -> None:
        """Both worker processes, from the launcher."""
        assert self.link is not None
        try:
            pair = self.link.pair()
        except LauncherError as exc:
            raise HarnessInfraError(str(exc)) from exc
        uid = self.ident[0] if self.ident is not None else None
        leased = uid if uid is not None and UID_BASE <= uid < UID_BASE + UID_SLOTS else None
        self.ref = Worker(role="reference", link=self.link, spawned=pair.reference, memory_limit_bytes=self.memory)
        self.cand = Worker(role="candidate", link=self.link, spawned=pair.candidate, memory_limit_bytes=self.memory,
                           leased_uid=leased, disk=self.disk)  # fmt: skip
        self.fd_socks = (pair.handover_fd, pair.handover_fd) if pair.handover_fd is not None else None
        self.ref.start()
        emit({"event": "worker", "role": "reference", "pid": self.ref.pid})
        self.cand.start()
        emit({"event": "worker", "role": "candidate", "pid": self.cand.pid})
        self.limits.update(nproc=pair.nproc, cgroup=pair.cgroup)  # for the record: how the kernel's processes count
        if self.spec.device.startswith("cuda") and self.opts.pin_timing_cpu:
            self.unpin()  # off the CPUs set aside for timed loops until this pair times (cpu_pin.py)

    def cache_fd(self) -> int:
        """A descriptor of the compile cache's folder, handed over by the launcher (it is shared by group)."""
        if self.setup is None or self.setup.cache_fd is None:
            raise HarnessInfraError("the launcher handed over no compile cache")
        return self.setup.cache_fd

    def build_dir(self, *, fresh: bool = False) -> int:
        """A descriptor of the kernel's build folder from the launcher (the caller closes it), emptied first when
        `fresh`: never a path of a folder the kernel can write, resolved here."""
        assert self.link is not None
        try:
            return self.link.build(fresh=fresh)
        except LauncherError as exc:
            raise HarnessInfraError(str(exc)) from exc

    def pin(self, cpu: int) -> dict[str, int]:
        """Every thread of both workers onto `cpu` (the launcher's: the kernel's threads are another user's)."""
        assert self.link is not None
        return self.link.pin(cpu)

    def unpin(self) -> dict[str, int]:
        """Both workers back onto every CPU but those set aside for timed loops (cpu_pin.general_cpus)."""
        assert self.link is not None
        return self.link.unpin()

    def candidate_cpu(self) -> CandidateCpu:
        """The kernel's processes' CPU time (candidate_cpu.py): everything below the launcher but the reference
        worker and this orchestrator."""
        assert self.setup is not None and self.ref is not None
        return CandidateCpu(self.setup.launcher_pid, exclude=(self.ref.pid, os.getpid()))

    def end_pair(self) -> int:
        """End the running pair of worker processes (before the timing phase's next pair): both are ended and
        reaped with whatever the kernel left running, so their device memory is free when this returns; the
        folders, the kernel's build folder, its Unix user and its sandbox stay. Returns how many stray processes
        had to be killed."""
        return self._end_processes()

    def spawn_pair(self, emit: Callable[[dict[str, Any]], None]) -> None:
        """A fresh pair of worker processes in place of the one end_pair() ended."""
        self._spawn(emit)

    def _end_processes(self) -> int:
        workers = [w for w in (self.cand, self.ref) if w is not None]
        if not workers or self.link is None:
            return 0
        for worker in workers:  # both exit (CUDA context teardown) at once, then each is waited for and ended
            worker.ask_exit()
        for worker in workers:
            worker.close()
        self.ref = self.cand = None
        self.fd_socks = None
        try:
            return self.link.end_pair()
        except LauncherError:
            return 0

    def stop(self) -> int:
        """End both workers and whatever the kernel left running; returns how many stray processes had to be killed.
        Also undoes a start that failed part-way (the launcher frees the uids and the disks when we end)."""
        stray = self._end_processes()
        if self.disk is not None:
            self.disk.close()
            self.disk = None
        return stray
