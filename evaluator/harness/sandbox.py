"""Spawning and talking to worker processes: scrubbed environment, own session, limits, own Unix user (the
candidate, when the evaluator is root: see privileges.py), its namespaces sandbox (namespaces.py), pipes, watchdogs
for host memory and for the bytes kept in its work folder.

stdlib only. The orchestrator owns both ends of each worker's pipes; a worker's stdout and stderr go to a log file
that is only ever shown cut to its head and tail (never parsed).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.harness.commands import Command
from evaluator.harness.privileges import Identity, give_to
from evaluator.harness.protocol import ENV_PASSTHROUGH

REPO_ROOT = Path(__file__).resolve().parents[2]
MAX_MESSAGE_BYTES = 8 * 1024 * 1024


class WorkerError(Exception):
    """A worker stopped answering: it died, ran out of time or out of memory."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "died", "timeout", "memory", "protocol"


def build_env(*, private_dir: Path, extensions_dir: Path | None = None, extra: dict[str, str] | None = None) -> dict:
    """A worker environment built from scratch (an allowlist), with a private HOME and build dirs."""
    env = {key: os.environ[key] for key in ENV_PASSTHROUGH if key in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        HOME=str(private_dir),
        TMPDIR=str(private_dir / "tmp"),
        PYTHONPATH=str(REPO_ROOT),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONNOUSERSITE="1",
        # an idle worker's OpenMP threads sleep at once instead of spinning into its partner's timed block
        # (candidate_cpu.py counts the kernel's CPU time there); both workers alike, so the ratio stays fair
        OMP_WAIT_POLICY="PASSIVE",
    )
    build = extensions_dir or (private_dir / "torch_extensions")
    env["TORCH_EXTENSIONS_DIR"] = str(build)
    env["TRITON_CACHE_DIR"] = str(build / "triton")
    env.update(extra or {})
    return env


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


def process_group_rss(pgid: int) -> int:
    """Resident bytes of every process in a process group (cgroup-free memory watchdog)."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in group_pids(pgid):
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def folder_bytes(root: Path, skip: tuple[str, ...] = ("io",)) -> int:
    """Bytes allocated by the files under a folder (never following links: the tree is a kernel's), except its
    `skip` subfolders (io/: outputs on their way to the reference, bounded per file by max_output_mb)."""
    total = 0
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        if dirpath == str(root):
            dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class Worker:
    """One long-lived worker process (`role` is "reference" or "candidate"), driven by JSON lines over two pipes.

    With `run_as` (uid, gid) the process runs as that user with no supplementary groups, and its private dir (and
    everything in it: tmp/, its build dirs) becomes that user's, mode 0o700. The log file is opened by this process
    and handed over as stdout/stderr, so the worker needs no permission on it.
    """

    def __init__(
        self,
        *,
        role: str,
        private_dir: Path,
        env: dict[str, str],
        limits: dict[str, Any],
        python: str | None = None,
        memory_limit_bytes: int = 0,
        run_as: Identity | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None,
        extra_fds: tuple[int, ...] = (),
        disk_limit_bytes: int = 0,
    ) -> None:
        self.role = role
        self.private_dir = private_dir
        self.env = env
        self.limits = limits
        self.python = python or sys.executable
        self.memory_limit_bytes = memory_limit_bytes
        self.run_as = run_as
        self.wrap = wrap  # e.g. namespaces.Plan.wrap: the command line that runs the worker in its sandbox
        self.extra_fds = extra_fds  # inherited at the same numbers (the output hand-over socket)
        self.disk_limit_bytes = disk_limit_bytes  # bytes the worker may keep in its private dir
        self.proc: subprocess.Popen | None = None
        self.log_path = private_dir / f"{role}.log"
        self._buffer = b""
        self._killed_for: str | None = None
        self._stop = threading.Event()
        self.peak_rss = 0

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> None:
        """Spawn the worker in a new session (its pgid is its pid) with only its own two pipe ends."""
        (self.private_dir / "tmp").mkdir(parents=True, exist_ok=True)
        identity: dict[str, Any] = {}
        if self.run_as is not None:
            give_to(self.private_dir, self.run_as)
            os.chmod(self.private_dir, 0o700)
            identity = {"user": self.run_as[0], "group": self.run_as[1], "extra_groups": []}
        cmd_r, self._cmd_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        args = [
            self.python,
            "-m",
            f"evaluator.harness.{self.role}_worker",
            str(cmd_r),
            str(rep_w),
            json.dumps(self.limits),
        ]
        if self.wrap is not None:
            args = self.wrap(args)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args,
                cwd=self.private_dir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(cmd_r, rep_w, *self.extra_fds),
                start_new_session=True,
                **identity,
            )
        os.close(cmd_r)
        os.close(rep_w)
        if self.memory_limit_bytes or self.disk_limit_bytes:
            threading.Thread(target=self._watch_memory, name=f"rss-{self.role}", daemon=True).start()

    def _watch_memory(self) -> None:
        assert self.proc is not None
        ticks = 0
        while not self._stop.wait(0.05) and self.proc.poll() is None:
            ticks += 1
            if self.memory_limit_bytes:
                rss = process_group_rss(self.proc.pid)
                self.peak_rss = max(self.peak_rss, rss)
                if rss > self.memory_limit_bytes:
                    limit = self.memory_limit_bytes >> 20
                    self._killed_for = f"host memory limit exceeded ({rss >> 20} MiB > {limit} MiB)"
                    kill_group(self.proc.pid)
                    return
            if self.disk_limit_bytes and ticks % 20 == 0:  # once a second: walking a build tree costs more
                used = folder_bytes(self.private_dir)
                if used > self.disk_limit_bytes:
                    limit = self.disk_limit_bytes >> 20
                    self._killed_for = f"work folder limit exceeded ({used >> 20} MiB > {limit} MiB)"
                    kill_group(self.proc.pid)
                    return

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one command and wait for its reply; raise WorkerError on death, timeout or memory kill."""
        assert self.proc is not None
        try:
            os.write(self._cmd_w, (json.dumps(message) + "\n").encode())
        except (BrokenPipeError, OSError):
            self._raise_dead()
        deadline = time.monotonic() + max(timeout, 0.0)
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError("timeout", f"{self.role} worker timed out after {timeout:.0f} s")
            ready, _, _ = select.select([self._rep_r], [], [], min(left, 0.5))
            if not ready:
                if self.proc.poll() is not None:
                    self._raise_dead()
                continue
            chunk = os.read(self._rep_r, 1 << 16)
            if not chunk:
                self._raise_dead()
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                self.kill()
                raise WorkerError("protocol", f"{self.role} worker sent an oversized message")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except ValueError as exc:
            self.kill()
            raise WorkerError("protocol", f"{self.role} worker sent a malformed message") from exc
        if not isinstance(reply, dict):
            self.kill()
            raise WorkerError("protocol", f"{self.role} worker sent a non-object message")
        return reply

    def _raise_dead(self) -> None:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        kill_group(self.proc.pid)
        if self._killed_for:
            raise WorkerError("memory", self._killed_for)
        if code is not None and code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        raise WorkerError("died", f"{self.role} process {how} without answering")

    def log_tail(self, limit: int = 1500) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        text = data.decode("utf-8", "replace").strip()
        return text if len(text) <= limit else text[: limit // 3] + "\n[...]\n" + text[-(2 * limit) // 3 :]

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (it is its own session leader) and reap it."""
        self._stop.set()
        if self.proc is None:
            return
        kill_group(self.proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for fd in (getattr(self, "_cmd_w", None), getattr(self, "_rep_r", None)):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._cmd_w = self._rep_r = None  # type: ignore[assignment]

    def ask_exit(self) -> None:
        """Ask the worker to exit without waiting (close() waits): several workers then tear down side by side."""
        if self.proc is not None and self.proc.poll() is None and self._cmd_w is not None:
            with contextlib.suppress(OSError):
                os.write(self._cmd_w, (json.dumps({"cmd": Command.EXIT}) + "\n").encode())

    def close(self, timeout: float = 5.0) -> None:
        """Ask politely, then kill the group anyway (grandchildren must never outlive an evaluation)."""
        self.ask_exit()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout)
        self.kill()
