"""Sharing one GPU between several evaluations without letting them disturb each other's timing. stdlib only.

Several evaluations may run on one GPU at once (a Celery worker with concurrency > 1, or several workers pinned to
the same device): worker start-up, imports and compilation are CPU work and overlap freely; correctness, timing
set-up, re-checks and profiling take the GPU *shared* (many at once); only the timed loops take it *exclusive*, so
no other kernel runs on the device while one is timed. A waiting timer blocks new shared holders (a turnstile), so
timing is never starved. Who may hold memory on the device is gpu_memory.py's question, not this lock's.

The lock is a pair of `flock`ed files per physical GPU (keyed by its UUID, so CUDA_VISIBLE_DEVICES remapping cannot
split one device into two locks); a process that dies releases its locks with its file descriptors.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path


def open_lock_file(path: Path) -> int:
    """A lock file every evaluation may flock, whatever uid its orchestrator runs as (0o666, umask aside)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except PermissionError:  # another uid's, not yet opened up: flock needs no write access
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o666)
    return fd


class LockTimeout(Exception):
    """The GPU stayed busy past the caller's deadline."""


class DeviceLock:
    """The activity lock of one physical GPU. acquire(mode) / release() for a holder that switches between modes
    (an evaluation: shared for correctness and checks, exclusive for its timed loops only: orchestrator/gpu_holds.py);
    shared() and exclusive() for a block held in one mode."""

    def __init__(self, directory: str | Path, device_key: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_key)[:100] or "gpu"
        self.directory = Path(directory)
        self.turnstile_path = self.directory / f"{safe}.turnstile"
        self.device_path = self.directory / f"{safe}.lock"
        self.waited_s = 0.0  # total time spent waiting, so callers can move their deadlines
        self.mode = "none"  # what this holder holds now: "none", "shared" or "exclusive"
        self._fds: tuple[int, int] | None = None  # (turnstile, device) while held

    def _open(self, path: Path) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        return open_lock_file(path)

    def _flock(self, fd: int, mode: int, deadline: float) -> None:
        started = time.monotonic()
        try:
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LockTimeout("the GPU stayed busy with other evaluations") from None
                    time.sleep(0.002 if mode == fcntl.LOCK_EX else 0.005)  # a shared hold is one command
        finally:
            self.waited_s += time.monotonic() - started

    def acquire(self, mode: str, deadline: float) -> None:
        """Take the GPU shared (others may too, but nobody times) or exclusive (nothing else of ours runs on it).
        Both queue at the turnstile, so a waiting timer blocks new shared holders and is never starved; the
        exclusive taker keeps the turnstile until it has the device, so the current shared holders drain."""
        if mode not in ("shared", "exclusive"):
            raise ValueError(f"unknown GPU hold {mode!r}")
        if self.mode != "none":
            raise RuntimeError(f"acquire({mode!r}) while holding {self.mode!r}")
        gate, device = self._open(self.turnstile_path), self._open(self.device_path)
        try:
            self._flock(gate, fcntl.LOCK_EX, deadline)
            try:
                self._flock(device, fcntl.LOCK_EX if mode == "exclusive" else fcntl.LOCK_SH, deadline)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
        except BaseException:
            os.close(gate)
            os.close(device)
            raise
        self._fds, self.mode = (gate, device), mode

    def release(self) -> None:
        if self._fds is not None:
            gate, device = self._fds
            fcntl.flock(device, fcntl.LOCK_UN)
            os.close(device)
            os.close(gate)
        self._fds, self.mode = None, "none"

    @contextlib.contextmanager
    def _held(self, mode: str, deadline: float) -> Iterator[None]:
        self.acquire(mode, deadline)
        try:
            yield
        finally:
            self.release()

    def shared(self, deadline: float) -> contextlib.AbstractContextManager[None]:
        """Held while correctness work runs on the GPU (others may too, but nobody is timing)."""
        return self._held("shared", deadline)

    def exclusive(self, deadline: float) -> contextlib.AbstractContextManager[None]:
        """Held while timed loops run: nothing else of ours runs on the GPU."""
        return self._held("exclusive", deadline)


@contextlib.contextmanager
def no_lock(deadline: float) -> Iterator[None]:
    yield
