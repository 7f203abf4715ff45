"""Spawning and talking to worker processes: scrubbed environment, own session, limits, own Unix user (the
candidate, when the evaluator is root: see privileges.py), its namespaces sandbox (namespaces.py), pipes, watchdogs
for host memory and for the bytes kept in its work folder.

stdlib only. The orchestrator owns both ends of each worker's pipes. A worker's stdout and stderr go into a pipe too,
drained into memory (its head and tail, never parsed): no log file in a folder the kernel can write, so nothing of
ours ever opens a path the kernel could have swapped for a link. Each worker runs in a cgroup of its own where the
machine lets us make one (cgroup.py), so its memory and process limits count every process it starts.
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
from evaluator.harness.protocol import ENV_PASSTHROUGH
from evaluator.harness.sandbox.cgroup import Cgroup
from evaluator.harness.sandbox.disk import DiskWatch
from evaluator.harness.sandbox.privileges import UID_BASE, UID_SLOTS, Identity
from evaluator.harness.sandbox.usage import pids_rss, tree_pids

REPO_ROOT = Path(__file__).resolve().parents[3]
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
LOG_KEEP_BYTES = 32 * 1024  # of a worker's output: this much of its head and of its tail
CGROUP_PIDS = 8192  # tasks (threads count) in one worker's cgroup: torch starts a few dozen per process


class WorkerError(Exception):
    """A worker stopped answering: it died, ran out of time or out of memory."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "died", "timeout", "memory", "protocol"


def build_env(
    *, private_dir: Path, extensions_dir: Path | None = None, extra: dict[str, str] | None = None
) -> dict[str, str]:
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
        # torch.compile builds in the worker itself, not in inductor's pool of compile processes: the pool's reader
        # thread would fail an honest kernel's thread check, and its processes would outlive the worker
        TORCHINDUCTOR_COMPILE_THREADS="1",
    )
    build = extensions_dir or (private_dir / "torch_extensions")
    env["TORCH_EXTENSIONS_DIR"] = str(build)
    env["TRITON_CACHE_DIR"] = str(build / "triton")
    env.update(extra or {})
    return env


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class Worker:
    """One long-lived worker process (`role` is "reference" or "candidate"), driven by JSON lines over two pipes.

    With `run_as` (uid, gid) the process runs as that user with no supplementary groups, and its private dir (and
    everything in it: tmp/, its build dirs) becomes that user's, mode 0o700. Its output goes into a pipe of ours.
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
        disk: DiskWatch | None = None,
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
        self.disk = disk  # the kernel's disks (disk.py): a cap reached stops the worker with the cap named
        self.proc: subprocess.Popen[bytes] | None = None
        self.cgroup: Cgroup | None = None
        self.cgroup_reason = "no memory limit"
        self._buffer = b""
        self._log_head = b""
        self._log_tail = b""
        self._log_cut = 0
        self._log_lock = threading.Lock()
        self._killed_for: str | None = None
        self._stop = threading.Event()
        self.peak_rss = 0

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def _leased_uid(self) -> int | None:
        """The worker's uid when it is this evaluation's own (a leased one): its processes can be found by it."""
        if self.run_as is not None and UID_BASE <= self.run_as[0] < UID_BASE + UID_SLOTS:
            return self.run_as[0]
        return None

    def start(self) -> None:
        """Spawn the worker in a new session (its pgid is its pid) with only its own two pipe ends, in a cgroup of its
        own when one can be made, as `run_as` when given."""
        if self.memory_limit_bytes:
            name = f"{os.getpid()}-{self.role}-{time.monotonic_ns()}"
            self.cgroup, self.cgroup_reason = Cgroup.make(name, memory_bytes=self.memory_limit_bytes, pids=CGROUP_PIDS)
        cmd_r, self._cmd_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        log_r, log_w = os.pipe()
        args = [
            self.python,
            "-m",
            f"evaluator.harness.workers.{self.role}_worker",
            str(cmd_r),
            str(rep_w),
            json.dumps(self.limits),
        ]
        if self.wrap is not None:
            args = self.wrap(args)
        cgroup, run_as = self.cgroup, self.run_as

        def child() -> None:  # between fork and exec: into the cgroup first (as us), then become the kernel's user
            if cgroup is not None:
                cgroup.enter()
            if run_as is not None:
                os.setgroups([])
                os.setresgid(run_as[1], run_as[1], run_as[1])
                os.setresuid(run_as[0], run_as[0], run_as[0])

        try:
            if cgroup is not None:
                cgroup.open_for_child()
            self.proc = subprocess.Popen(
                args,
                cwd=self.private_dir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log_w,
                stderr=log_w,
                pass_fds=(cmd_r, rep_w, *self.extra_fds),
                start_new_session=True,
                preexec_fn=child if (cgroup is not None or run_as is not None) else None,
            )
        finally:
            if cgroup is not None:
                cgroup.close_for_child()
            os.close(cmd_r)
            os.close(rep_w)
            os.close(log_w)
        threading.Thread(target=self._drain_log, args=(log_r,), name=f"log-{self.role}", daemon=True).start()
        if self.memory_limit_bytes or self.disk is not None:
            threading.Thread(target=self._watch_memory, name=f"rss-{self.role}", daemon=True).start()

    def _drain_log(self, fd: int) -> None:
        """Keep the head and the tail of the worker's output (a kernel may print without end)."""
        try:
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return
                with self._log_lock:
                    if len(self._log_head) < LOG_KEEP_BYTES:
                        room = LOG_KEEP_BYTES - len(self._log_head)
                        self._log_head += chunk[:room]
                        chunk = chunk[room:]
                    tail = self._log_tail + chunk
                    self._log_cut += max(0, len(tail) - LOG_KEEP_BYTES)
                    self._log_tail = tail[-LOG_KEEP_BYTES:]
        finally:
            os.close(fd)

    def processes(self) -> list[int]:
        """Every process of this worker: its cgroup's, else its process tree and its leased uid's."""
        assert self.proc is not None
        if self.cgroup is not None:
            return self.cgroup.pids()
        return tree_pids(self.proc.pid, self._leased_uid())

    def _watch_memory(self) -> None:
        assert self.proc is not None
        ticks = 0
        while not self._stop.wait(0.05) and self.proc.poll() is None:
            ticks += 1
            why = self._over_limit(ticks)
            if why is not None:
                self._killed_for = why
                self._kill_all()
                return

    def _over_limit(self, ticks: int) -> str | None:
        """Why the worker must stop now (memory or disk over its limit), else None."""
        if self.cgroup is not None and self.cgroup.oom_killed():
            # the kernel's limit killed one of the group's processes: the whole evaluation is over the limit
            return self._cgroup_oom()
        if self.memory_limit_bytes and (self.cgroup is None or ticks % 4 == 0):
            # with a cgroup the kernel enforces the limit; this only samples the peak
            rss = pids_rss(self.processes())
            self.peak_rss = max(self.peak_rss, rss)
            if rss > self.memory_limit_bytes:
                return f"host memory limit exceeded ({rss >> 20} MiB > {self.memory_limit_bytes >> 20} MiB)"
        if self.disk is not None and ticks % (4 if self.disk.mounted else 20) == 0:  # a walk (no root) costs more
            return self.disk.reached()
        return None

    def _cgroup_oom(self) -> str:
        return (
            f"host memory limit exceeded (the cgroup's {self.memory_limit_bytes >> 20} MiB; its processes were killed)"
        )

    def _kill_all(self) -> None:
        """SIGKILL the worker's process group and every other process of its own (cgroup, tree, leased uid)."""
        assert self.proc is not None
        kill_group(self.proc.pid)
        if self.cgroup is not None:
            self.cgroup.kill()
            return
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

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
        if self.disk is not None and (why := self.disk.reached()) is not None:  # full when its step ended
            self._killed_for = why
            self.kill()
            raise WorkerError("disk", why)
        return reply

    def _raise_dead(self) -> None:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._kill_all()
        if self._killed_for is None and self.cgroup is not None and self.cgroup.oom_killed():
            self._killed_for = self._cgroup_oom()
        if self._killed_for:
            raise WorkerError("disk" if self._killed_for.startswith("disk") else "memory", self._killed_for)
        if code is not None and code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        raise WorkerError("died", f"{self.role} process {how} without answering")

    def log_tail(self, limit: int = 1500) -> str:
        """The worker's output, cut to its head and tail: read from memory, never from a file."""
        with self._log_lock:
            head, tail, cut = self._log_head, self._log_tail, self._log_cut
        data = head + (b"\n[...]\n" if cut else b"") + tail
        text = data.decode("utf-8", "replace").strip()
        return text if len(text) <= limit else text[: limit // 3] + "\n[...]\n" + text[-(2 * limit) // 3 :]

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (it is its own session leader) and reap it."""
        self._stop.set()
        if self.proc is None:
            return
        self._kill_all()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        if self.cgroup is not None:
            self.cgroup.remove()
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
