"""Sharing one GPU between several evaluations without letting them disturb each other's timing. stdlib only.

Several evaluations may run on one GPU at once (a Celery worker with concurrency > 1, or several workers pinned to
the same device): worker start-up, imports and compilation are CPU work and overlap freely; the correctness phase
takes the GPU *shared* (many at once); the timing phase takes it *exclusive*, so no other kernel runs on the device
while one is timed. A waiting timer blocks new shared holders (a turnstile), so timing is never starved.

The lock is a pair of `flock`ed files per physical GPU (keyed by its UUID, so CUDA_VISIBLE_DEVICES remapping cannot
split one device into two locks); a process that dies releases its locks with its file descriptors.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO


class LockTimeout(Exception):
    """The GPU stayed busy past the caller's deadline."""


class DeviceLock:
    def __init__(self, directory: str | Path, device_key: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_key)[:100] or "gpu"
        self.directory = Path(directory)
        self.turnstile_path = self.directory / f"{safe}.turnstile"
        self.device_path = self.directory / f"{safe}.lock"
        self.waited_s = 0.0  # total time spent waiting, so callers can move their deadlines
        self._held: tuple[IO[str], IO[str]] | None = None  # (turnstile, device) while held exclusive

    def _open(self, path: Path) -> IO[str]:
        self.directory.mkdir(parents=True, exist_ok=True)
        return open(path, "a")  # closed by the context managers below

    def _flock(self, fh: IO[str], mode: int, deadline: float) -> None:
        started = time.monotonic()
        try:
            while True:
                try:
                    fcntl.flock(fh, mode | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LockTimeout("the GPU stayed busy with other evaluations") from None
                    time.sleep(0.02)
        finally:
            self.waited_s += time.monotonic() - started

    @contextlib.contextmanager
    def shared(self, deadline: float) -> Iterator[None]:
        """Held while this evaluation runs correctness work on the GPU (others may too, but nobody is timing)."""
        with self._open(self.turnstile_path) as gate, self._open(self.device_path) as device:
            self._flock(gate, fcntl.LOCK_EX, deadline)  # wait behind any timer that is queued
            try:
                self._flock(device, fcntl.LOCK_SH, deadline)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
            try:
                yield
            finally:
                fcntl.flock(device, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self, deadline: float) -> Iterator[None]:
        """Held while this evaluation times: nothing else of ours runs on the GPU."""
        with self._open(self.turnstile_path) as gate, self._open(self.device_path) as device:
            self._flock(gate, fcntl.LOCK_EX, deadline)  # new shared holders now queue behind us
            try:
                self._flock(device, fcntl.LOCK_EX, deadline)  # and the current ones drain
                self._held = (gate, device)
                try:
                    yield
                finally:
                    self._held = None
                    fcntl.flock(device, fcntl.LOCK_UN)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def released(self, deadline: float) -> Iterator[None]:
        """Inside exclusive(): give the GPU back for a while (a new worker process pair starts: CPU work, torch
        imports, CUDA contexts, none of it timing), then queue for it again like any timer (the wait counts in
        waited_s). Other evaluations may time, or run correctness, meanwhile."""
        if self._held is None:
            raise RuntimeError("released() outside exclusive()")
        gate, device = self._held
        fcntl.flock(device, fcntl.LOCK_UN)
        fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            self._flock(gate, fcntl.LOCK_EX, deadline)
            self._flock(device, fcntl.LOCK_EX, deadline)


@contextlib.contextmanager
def no_lock(deadline: float) -> Iterator[None]:
    yield
