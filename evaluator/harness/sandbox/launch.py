"""Starting and stopping an evaluation's two worker processes, and what the kernel's runs inside: its Unix user (a
leased uid when we are root, privileges.py), its namespaces sandbox (namespaces.py), its limits, and the socket
pair of the zero-copy output hand-over (cuda_fd.py).

Nothing here depends on the problem or the kernel, so a standby harness does all of it before either is known.
stdlib only, like the orchestrator.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.protocol import Options, Spec
from evaluator.harness.sandbox.beneath import DIR_FLAGS, empty_dir, open_trusted_dir, remove_tree
from evaluator.harness.sandbox.candidate_cpu import descendants
from evaluator.harness.sandbox.disk import TMP_DISK, TMP_FOLDERS, WORK_DISK, DiskCaps, DiskWatch
from evaluator.harness.sandbox.hardening import become_subreaper, kill_adopted_children, process_name, process_uid
from evaluator.harness.sandbox.namespaces import Plan, SandboxUnavailable, bwrap_path, choose_mode
from evaluator.harness.sandbox.privileges import Identity, UidLease, candidate_identity, check_runtime, open_path
from evaluator.harness.sandbox.spawn import Worker, build_env


@dataclass(frozen=True)
class Folders:
    """An evaluation's work folder and the private folders inside it. Everything the kernel can write is on its
    disks (disk.py): `disk` (its folder, io/ and build/) and `tmp` (its /tmp, /var/tmp and /dev/shm)."""

    work: Path
    ref: Path  # the reference worker's; the kernel may not enter it
    disk: Path  # the kernel's work disk (a sized filesystem where we are root); its root is ours
    cand: Path  # the kernel's own
    io: Path  # outputs on their way to the reference (file hand-over)
    handoff: Path  # files written by the clean side for the kernel to read (kernel, init, params), never to write
    build: Path  # the kernel's extension builds: its to fill, but in our folder, so it cannot be swapped for a link
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

    def kernel_folders(self) -> list[Path]:
        """The folders the kernel owns, made fresh on its disks (its build folder is ours, shared by group)."""
        return [self.cand, self.cand / "tmp", self.io, *(self.tmp / name for name in TMP_FOLDERS)]

    @property
    def kernel_file(self) -> Path:
        return self.handoff / "kernel.py"

    @property
    def init_file(self) -> Path:  # the reference's initial state, written by the reference worker
        return self.handoff / "init.pt"


def disk_caps(opts: Options) -> DiskCaps:
    return DiskCaps(opts.work_dir_mb << 20, opts.work_dir_files, opts.tmp_mb << 20, opts.tmp_files)


def memory_limit(opts: Options) -> int:
    """Host memory each worker may use: the option, else half the machine (at least 2 GiB)."""
    if opts.host_memory_mb:
        return opts.host_memory_mb << 20
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 8 << 30
    return max(2 << 30, total // 2)


def user_process_count() -> int:
    """Threads this user already runs: RLIMIT_NPROC counts them all, so the workers' limit is on top of these."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid and len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


class Workers:
    """The reference and candidate worker processes of one evaluation, from folders to reaped processes."""

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
        self.lease: UidLease | None = None
        self.fd_socks: tuple[socket.socket, socket.socket] | None = None  # cuda_fd hand-over: (candidate, ref)
        self.memory = 0
        self.limits: dict[str, Any] = {}
        self.disk: DiskWatch | None = None
        self._cache_fd: int | None = None
        self._launch: tuple[str, Plan | None, dict[str, str]] = ("", None, {})  # python, sandbox plan, candidate env

    def start(self, emit: Callable[[dict[str, Any]], None]) -> None:
        """Private folders, limits, the candidate's Unix user, and both worker processes (they import torch side by
        side). A failure part-way leaves what was made for stop() to undo."""
        become_subreaper()  # before any worker exists: processes a kernel leaves behind come back to us
        f = self.folders
        for d in (f.ref, f.ref / "tmp", f.disk, f.tmp):  # the disks: mount points (root) or plain folders
            d.mkdir(parents=True, exist_ok=True)
        self.memory = memory_limit(self.opts)
        self.limits = {
            "fsize_bytes": self.opts.file_size_mb << 20,
            "nproc": user_process_count() + 4096,
            "data_bytes": 0 if self.cuda else self.memory,  # RLIMIT_DATA only on CPU; CUDA relies on the watchdog
            "cpu_seconds": int(self.spec.timeout) + 60,
        }
        python = self.spec.python or sys.executable
        # The kernel runs as an unprivileged user when we are root (privileges.py), one uid per evaluation: it owns
        # its own dir (the io dir inside it too: the reference, as root, still writes there), may enter the work dir
        # but not list it, and may not enter the reference's dir at all. Around it, its namespaces (namespaces.py).
        try:
            self.lease = UidLease()  # machine-wide slots (privileges.uid_slots_dir), never in the work root
            ident = candidate_identity(lease=self.lease)
            uid, gid = ident if ident is not None else (os.getuid(), os.getgid())
            self.sandbox, self.sandbox_reason = choose_mode(uid=uid, gid=gid)
        except (ValueError, RuntimeError, SandboxUnavailable) as exc:
            raise HarnessInfraError(str(exc)) from exc
        self.ident = ident
        if ident is not None:
            open_path(f.work, ident)
            os.chmod(f.work, 0o711)
            os.chmod(f.ref, 0o700)
        f.handoff.mkdir(mode=0o755, exist_ok=True)  # the orchestrator's: the kernel may read here, never write
        for folder in f.kernel_folders():  # fresh and empty: nothing to walk, nothing planted
            folder.mkdir(mode=0o700)
            if ident is not None:
                os.chown(folder, *ident)
        f.build.mkdir(mode=0o700)  # ours, the kernel's through its group (set-group-ID): a cached build copied in
        if ident is not None:  # stays its to rebuild
            os.chmod(f.build, 0o2770)  # first, while its group is ours (else the set-group-ID bit would be dropped)
            os.chown(f.build, os.geteuid(), ident[1])
        self.disk = DiskWatch(f.disk, f.tmp, disk_caps(self.opts))
        self.limits["disk"] = self.disk.report()  # for the record: the caps and what holds them
        plan = self._plan(python, uid, gid) if self.sandbox == "namespaces" else None
        cand_env = build_env(private_dir=f.cand)
        if plan is not None:
            cand_env["USER"] = cand_env["LOGNAME"] = "kernel"
        unusable = check_runtime(python, ident, env=cand_env, cwd=f.cand, wrap=plan.wrap if plan else None)
        if unusable:  # fail closed: never fall back to running the kernel as root, never blame the kernel for it
            raise HarnessInfraError(unusable)
        self._launch = (python, plan, cand_env)
        self._spawn(emit)

    def _spawn(self, emit: Callable[[dict[str, Any]], None]) -> None:
        """Both worker processes (and the hand-over's socket pair), as start() prepared them."""
        python, plan, cand_env = self._launch
        f, ident = self.folders, self.ident
        if self.cuda:  # the zero-copy output hand-over's socket (cuda_fd.py): one end for each worker
            self.fd_socks = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            for sock in self.fd_socks:
                os.set_inheritable(sock.fileno(), True)
        self.ref = Worker(
            role="reference",
            private_dir=f.ref,
            env=build_env(private_dir=f.ref),
            limits=self.limits,
            python=python,
            memory_limit_bytes=self.memory,
            extra_fds=(self.fd_socks[1].fileno(),) if self.fd_socks else (),
        )
        self.cand = Worker(
            role="candidate",
            private_dir=f.cand,
            env=cand_env,
            limits={**self.limits, "pid_namespace": plan is not None},
            python=python,
            memory_limit_bytes=self.memory,
            run_as=ident,
            wrap=plan.wrap if plan else None,
            extra_fds=(self.fd_socks[0].fileno(),) if self.fd_socks else (),
            disk=self.disk,
        )
        self.ref.start()
        emit({"event": "worker", "role": "reference", "pid": self.ref.pid})
        self.cand.start()  # both import torch in parallel
        emit({"event": "worker", "role": "candidate", "pid": self.cand.pid})
        self.limits["cgroup"] = self.cand.cgroup_reason  # for the record: how the kernel's processes are counted

    def _plan(self, python: str, uid: int, gid: int) -> Plan:
        """The bubblewrap command line around the candidate (namespaces.py), and the /etc files it binds."""
        f = self.folders
        bwrap = bwrap_path()
        assert bwrap is not None  # choose_mode found it
        plan = Plan(
            bwrap=bwrap,
            python=python,
            private_dir=f.cand,
            io_dir=f.io,
            build_dir=f.build,
            etc_dir=f.work / "sandbox-etc",
            handoff_dir=f.handoff,
            cuda=self.cuda,
            tmp_dir=f.tmp if self.disk is not None and self.disk.mounted else None,
            tmp_bytes=self.opts.tmp_mb << 20,
            uid=uid,
            gid=gid,
        )
        plan.write_etc()
        return plan

    def cache_fd(self) -> int:
        """A descriptor of the compile cache's folder (the spec's), opened once."""
        if self._cache_fd is None:
            os.makedirs(self.spec.compile_cache_dir, exist_ok=True)
            self._cache_fd = os.open(self.spec.compile_cache_dir, DIR_FLAGS)
        return self._cache_fd

    def build_dir(self, *, fresh: bool = False) -> int:
        """A descriptor of the kernel's build folder (the caller closes it), opened beneath the kernel's disk (ours),
        never through a link; emptied first when `fresh` (without recursion: beneath.empty_dir)."""
        with open_trusted_dir(self.folders.disk) as disk:
            fd = os.open(self.folders.build.name, DIR_FLAGS, dir_fd=disk)
        if fresh:
            empty_dir(fd)
        return fd

    def respawn(self, emit: Callable[[dict[str, Any]], None]) -> int:
        """A fresh pair of worker processes in place of the running one (the timing phase's next process pair):
        the old pair is ended and reaped with whatever the kernel left running; the folders, the kernel's build
        folder, its Unix user and its sandbox plan stay. Returns how many stray processes had to be killed."""
        stray = self._end_processes()
        self.ref = self.cand = None
        self._spawn(emit)
        return stray

    def _end_processes(self) -> int:
        workers = [w for w in (self.cand, self.ref) if w is not None]
        is_kernels = self._kernels_orphan(self.ref.pid if self.ref is not None else None)
        for worker in workers:  # both exit (CUDA context teardown) at once, then each is waited for and reaped
            worker.ask_exit()
        for worker in workers:
            worker.close()
        stray = kill_adopted_children(is_kernels)
        for sock in self.fd_socks or ():
            sock.close()
        self.fd_socks = None
        return stray

    def _kernels_orphan(self, ref_pid: int | None) -> Callable[[int], bool]:
        """Which orphan adopted after the workers exit was the kernel's (the others are killed all the same):
        bubblewrap's own processes re-parent to us as it exits and are not; with a uid of its own the kernel's are
        that uid's, which it cannot shed; without one, whatever was not in the reference worker's tree now (the
        reference's own helpers are orphaned too: inductor's compile workers under the compile baseline)."""
        bwrap = self.sandbox == "namespaces"
        uid = self.ident[0] if self.ident is not None else None
        ours = frozenset(descendants(ref_pid)) if ref_pid and uid is None else frozenset()

        def is_kernels(pid: int) -> bool:
            if bwrap and process_name(pid) == "bwrap":
                return False
            return process_uid(pid) == uid if uid is not None else pid not in ours

        return is_kernels

    def stop(self) -> int:
        """End both workers and whatever the kernel left running, then free the uid; returns how many stray
        processes had to be killed. Also undoes a start that failed part-way."""
        stray = self._end_processes()
        if self.disk is not None:
            if not self.disk.mounted and not self.opts.keep_workdir:  # plain folders (no root): removed, no recursion
                with open_trusted_dir(self.folders.work) as work:
                    remove_tree(work, WORK_DISK)
            self.disk.close()
            self.disk = None
        if self._cache_fd is not None:
            os.close(self._cache_fd)
            self._cache_fd = None
        if self.lease is not None:
            self.lease.release()  # after the kernel's processes are gone: the next evaluation may take this uid
        return stray
