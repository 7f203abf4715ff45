"""Admitting evaluations to one GPU by memory: each declares what its two workers will hold, and waits until that
fits beside what the others declared. stdlib only.

The activity lock (gpu_lock.py) decides who may *run* on the device (many for correctness, one for timing); this
ledger decides who may *hold memory* on it. Before it, any problem whose input set and output passed 1 GB held the
GPU alone for its whole evaluation (correctness, profiling, shutdown) on a card with 141 GB: about 120 of the 250
KernelBench problems, and most of a bundle's exclusive time spent on nothing being timed.

A reservation is a file `<key>.mem/r-<pid>-<random>` holding its byte count, flocked (exclusive) by its owner for as
long as it lives: a process that dies drops the flock with its descriptors, and the next admission, which probes
every reservation with a non-blocking shared flock, finds it unlocked and removes it. Admission itself is serialised
by a flock on `<key>.mem.lock`, so two evaluations never both see the same free memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.gpu_lock import open_lock_file

POLL_S = 0.05


class MemoryTimeout(Exception):
    """The declared memory did not fit before the caller's deadline."""


@dataclass
class Admission:
    """What one admission waited for, for the record (`environment.gpu_hold`)."""

    reserved_bytes: int
    capacity_bytes: int
    waited_s: float = 0.0
    # at the moment of the first refusal: how many other reservations there were and how much they held
    others_at_wait: int = 0
    others_bytes_at_wait: int = 0

    def describe(self) -> str:
        if not self.waited_s:
            return "admitted at once"
        return (
            f"waited {self.waited_s:.1f} s for {self.reserved_bytes / 2**30:.1f} GiB: {self.others_at_wait} other "
            f"evaluations held {self.others_bytes_at_wait / 2**30:.1f} of {self.capacity_bytes / 2**30:.1f} GiB"
        )


class MemoryLedger:
    """The reservations of one physical device (keyed like gpu_lock.DeviceLock), in `directory`."""

    def __init__(self, directory: str | Path, device_key: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_key)[:100] or "gpu"
        self.directory = Path(directory)
        self.folder = self.directory / f"{safe}.mem"
        self.ledger_path = self.directory / f"{safe}.mem.lock"
        self._mine: Path | None = None  # this ledger's own reservation while reserve() holds it
        self._mine_bytes = 0

    def _held(self, prefix: str = "r-") -> tuple[int, int]:
        """(files, bytes) held by live owners (reservations "r-", waiters "w-"); stale ones (owner gone) are
        removed. Call under the ledger."""
        count = total = 0
        for path in self.folder.iterdir():
            if not path.name.startswith(prefix):
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:  # its owner holds it: alive
                    text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                    count += 1
                    total += int(text) if text.isdigit() else 0
                    continue
                with contextlib.suppress(OSError):  # nobody holds it: its owner is gone
                    path.unlink()
            finally:
                os.close(fd)
        return count, total

    @contextlib.contextmanager
    def _ledger(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            self.folder.mkdir(mode=0o777)
            os.chmod(self.folder, 0o1777)  # every evaluation's uid adds its own; only the owner removes a live one
        fd = open_lock_file(self.ledger_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def others(self) -> tuple[int, int]:
        """(reservations, bytes) of the other evaluations holding memory on this device now (this ledger's own
        reservation, while reserve() holds it, left out)."""
        with self._ledger():
            count, held = self._held()
        mine = 1 if self._mine is not None else 0
        return max(count - mine, 0), max(held - self._mine_bytes, 0)

    def waiting(self) -> int:
        """How many evaluations wait for memory on this device now."""
        with self._ledger():
            return self._held("w-")[0]

    @contextlib.contextmanager
    def reserve(self, nbytes: int, capacity: int, deadline: float) -> Iterator[Admission]:
        """Hold `nbytes` of the device's `capacity` until the block ends, waiting until it fits beside the others
        (a reservation larger than the capacity waits until it is alone, then runs). MemoryTimeout past `deadline`."""
        nbytes = max(0, min(int(nbytes), int(capacity)))
        admission = Admission(reserved_bytes=nbytes, capacity_bytes=int(capacity))
        started = time.monotonic()
        fd: int | None = None
        waiter: int | None = None  # a flocked "w-" file while this admission waits (MemoryLedger.waiting)
        token = f"{os.getpid()}-{secrets.token_hex(6)}"
        path, waiting = self.folder / f"r-{token}", self.folder / f"w-{token}"
        try:
            while fd is None:
                with self._ledger():
                    count, held = self._held()
                    if held + nbytes <= capacity or count == 0:
                        fd = open_lock_file(path)
                        fcntl.flock(fd, fcntl.LOCK_EX)
                        os.write(fd, str(nbytes).encode())
                    elif waiter is None:
                        admission.others_at_wait, admission.others_bytes_at_wait = count, held
                        waiter = open_lock_file(waiting)
                        fcntl.flock(waiter, fcntl.LOCK_EX)
                if waiter is not None and fd is not None:
                    with contextlib.suppress(OSError):
                        waiting.unlink()
                    os.close(waiter)
                    waiter = None
                if fd is None:
                    if time.monotonic() > deadline:
                        raise MemoryTimeout(
                            f"the GPU's memory stayed taken by other evaluations: {nbytes / 2**30:.1f} GiB did not fit"
                        )
                    time.sleep(POLL_S)
            admission.waited_s = round(time.monotonic() - started, 3) if admission.others_at_wait else 0.0
            self._mine, self._mine_bytes = path, nbytes
            yield admission
        finally:
            self._mine, self._mine_bytes = None, 0
            for descriptor, name in ((fd, path), (waiter, waiting)):
                if descriptor is not None:
                    with contextlib.suppress(OSError):
                        name.unlink()
                    os.close(descriptor)
