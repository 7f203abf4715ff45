"""The orchestrator's side of one worker process: its pipes, its output drained into memory, the watchdogs for host
memory and for the kernel's disks, and what it means when it stops answering. stdlib only, no privilege.

The launcher starts the worker (launcher/pair.py: its uid, its sandbox, its cgroup) and hands over only the
orchestrator's ends: the command pipe's write end, the reply and output pipes' read ends and a pidfd that becomes
readable when the worker ends. Killing it, and learning how it ended, are requests to the launcher (link.py). A
worker's stdout and stderr go into a pipe drained into memory (its head and tail, never parsed): no log file in a
folder the kernel can write, so nothing of ours ever opens a path the kernel could have swapped for a link.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from evaluator.harness.commands import Command
from evaluator.harness.sandbox.disk_watch import DiskWatch
from evaluator.harness.sandbox.link import LauncherError, Link, Spawned
from evaluator.harness.sandbox.usage import pids_rss, tree_pids

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
LOG_KEEP_BYTES = 32 * 1024  # of a worker's output: this much of its head and of its tail


class WorkerError(Exception):
    """A worker stopped answering: it died, ran out of time or out of memory, or filled its disk."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "died", "timeout", "memory", "disk", "protocol"


class Worker:
    """One long-lived worker process (`role` is "reference" or "candidate"), driven by JSON lines over two pipes."""

    def __init__(
        self,
        *,
        role: str,
        link: Link,
        spawned: Spawned,
        memory_limit_bytes: int = 0,
        leased_uid: int | None = None,
        disk: DiskWatch | None = None,
    ) -> None:
        self.role = role
        self.link = link
        self.spawned = spawned
        self.cgroup = spawned.cgroup
        self.memory_limit_bytes = memory_limit_bytes
        self.leased_uid = leased_uid  # the kernel's own uid: its processes can be found by it (no cgroup)
        self.disk = disk  # the kernel's disks (disk.py): a cap reached stops the worker with the cap named
        self._cmd_w: int | None = spawned.cmd_w
        self._rep_r: int | None = spawned.rep_r
        self._pidfd: int | None = spawned.pidfd
        self._buffer = b""
        self._log_head = b""
        self._log_tail = b""
        self._log_cut = 0
        self._log_lock = threading.Lock()
        self._killed_for: str | None = None
        self._stop = threading.Event()
        self._code: int | None = None
        self.peak_rss = 0

    @property
    def pid(self) -> int:
        return self.spawned.pid

    def start(self) -> None:
        """Drain its output, and watch its memory and disks."""
        threading.Thread(target=self._drain_log, args=(self.spawned.log_r,), name=f"log-{self.role}",
                         daemon=True).start()  # fmt: skip
        if self.memory_limit_bytes or self.disk is not None:
            threading.Thread(target=self._watch, name=f"rss-{self.role}", daemon=True).start()

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

    def alive(self) -> bool:
        return self._pidfd is not None and not select.select([self._pidfd], [], [], 0)[0]

    def processes(self) -> list[int]:
        """Every process of this worker: its cgroup's, else its process tree and its leased uid's."""
        if self.cgroup is not None:
            return self.cgroup.pids()
        return tree_pids(self.pid, self.leased_uid)

    def _watch(self) -> None:
        ticks = 0
        while not self._stop.wait(0.05) and self.alive():
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
        """The worker's process group and every other process of its own, killed by the launcher."""
        with contextlib.suppress(LauncherError):
            self.link.kill(self.role)

    def _wait(self, timeout: float) -> int | None:
        """How the worker ended (its exit code, or minus its signal), waiting up to `timeout` for its pidfd."""
        if self._code is not None:
            return self._code
        if self._pidfd is not None:
            select.select([self._pidfd], [], [], max(timeout, 0.0))
        deadline = time.monotonic() + 2  # ended: the launcher reaps it within its next round
        while time.monotonic() < deadline:
            try:
                self._code = self.link.status(self.role)
            except LauncherError:
                return None
            if self._code is not None or self.alive():
                break
            time.sleep(0.02)
        return self._code

    def request(
        self, message: dict[str, Any], timeout: float, extend: Callable[[float], float] | None = None
    ) -> dict[str, Any]:
        """Send one command and wait for its reply; raise WorkerError on death, timeout, memory or disk kill.
        `extend`, called about every 0.5 s while waiting with the deadline (monotonic), returns it, pushed back or
        not (the candidate's build allowance: orchestrator/build_watch.py)."""
        assert self._cmd_w is not None and self._rep_r is not None
        try:
            os.write(self._cmd_w, (json.dumps(message) + "\n").encode())
        except OSError:
            self._raise_dead()
        deadline = time.monotonic() + max(timeout, 0.0)
        while b"\n" not in self._buffer:
            if extend is not None:
                deadline = extend(deadline)
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError("timeout", f"{self.role} worker timed out after {timeout:.0f} s")
            ready, _, _ = select.select([self._rep_r, *([self._pidfd] if self._pidfd else [])], [], [], min(left, 0.5))
            if self._rep_r not in ready:
                if ready:  # its pidfd: the worker ended (anything it wrote before is read first)
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
        code = self._wait(5)
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
        """Have the launcher kill the worker's whole process group (and its cgroup); wait for it to end."""
        self._stop.set()
        if self._pidfd is None:
            return
        self._kill_all()
        self._wait(10)
        for fd in (self._cmd_w, self._rep_r, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._cmd_w = self._rep_r = self._pidfd = None

    def ask_exit(self) -> None:
        """Ask the worker to exit without waiting (close() waits): several workers then tear down side by side."""
        if self._cmd_w is not None and self.alive():
            with contextlib.suppress(OSError):
                os.write(self._cmd_w, (json.dumps({"cmd": Command.EXIT}) + "\n").encode())

    def close(self, timeout: float = 5.0) -> None:
        """Ask politely, then kill the group anyway (grandchildren must never outlive an evaluation)."""
        self.ask_exit()
        if self._pidfd is not None:
            select.select([self._pidfd], [], [], timeout)
        self.kill()
