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

A declaration that does not fit waits, and others that fit pass it: the device stays full. But a large one (a
whole-device declaration waits for the device to be empty) could then wait for ever behind a stream of small ones:
on the H200 L1/36 waited out its 330 s that way in a bundle of 8 slots. So each waiter's file holds when it began to
wait, and once one has waited `patience_s`, no later arrival is admitted before it: the others drain and it runs.
The harness passes protocol.Options.gpu_memory_patience_s (60 s: the replay, benchmarks/results/replay.md, predicts
it removes the full bundle's timeouts at no cost in wall time).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
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
    # of the wait, how long it fitted but was held back behind an evaluation that had waited past the patience
    held_back_s: float = 0.0

    def describe(self) -> str:
        if not self.waited_s:
            return "admitted at once"
        behind = (
            f"; {self.held_back_s:.1f} s of it held back behind an evaluation that had waited longer"
            if self.held_back_s
            else ""
        )
        return (
            f"waited {self.waited_s:.1f} s for {self.reserved_bytes / 2**30:.1f} GiB: {self.others_at_wait} other "
            f"evaluations held {self.others_bytes_at_wait / 2**30:.1f} of {self.capacity_bytes / 2**30:.1f} GiB"
            f"{behind}"
        )


class MemoryLedger:
    """The reservations of one physical device (keyed like gpu_lock.DeviceLock), in `directory`."""

    def __init__(self, directory: str | Path, device_key: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_key)[:100] or "gpu"
        self.directory = Path(directory)
        self.folder = self.directory / f"{safe}.mem"
        self.ledger_path = self.directory / f"{safe}.mem.lock"
        self._mine_fd: int | None = None  # this ledger's own reservation (flocked) while reserve() holds it
        self._mine_bytes = 0

    def _live(self, prefix: str, skip: Path | None = None) -> list[str]:
        """What the files of live owners hold (reservations "r-": bytes, waiters "w-": when they began to wait);
        stale ones (owner gone) are removed. Call under the ledger."""
        found = []
        for path in self.folder.iterdir():
            if not path.name.startswith(prefix) or path == skip:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:  # its owner holds it: alive
                    found.append(os.pread(fd, 64, 0).decode("ascii", "replace").strip())
                    continue
                with contextlib.suppress(OSError):  # nobody holds it: its owner is gone
                    path.unlink()
            finally:
                os.close(fd)
        return found

    def _held(self) -> tuple[int, int]:
        """(reservations, bytes) of live owners. Call under the ledger."""
        held = self._live("r-")
        return len(held), sum(int(text) for text in held if text.isdigit())

    def _overdue(self, arrived: float, patience_s: float, skip: Path) -> bool:
        """Does a waiter that began to wait before `arrived` wait longer than `patience_s` now? Call under the
        ledger."""
        now = time.time()
        for text in self._live("w-", skip):
            with contextlib.suppress(ValueError):
                since = float(text)
                if since < arrived and now - since > patience_s:
                    return True
        return False

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
        mine = 1 if self._mine_fd is not None else 0
        return max(count - mine, 0), max(held - self._mine_bytes, 0)

    def waiting(self) -> int:
        """How many evaluations wait for memory on this device now."""
        with self._ledger():
            return len(self._live("w-"))

    @contextlib.contextmanager
    def reserve(
        self,
        nbytes: int,
        capacity: int,
        deadline: float,
        patience_s: float = math.inf,
        on_wait: Callable[[], None] | None = None,
    ) -> Iterator[Admission]:
        """Hold `nbytes` of the device's `capacity` until the block ends, waiting until it fits beside the others
        (a reservation larger than the capacity waits until it is alone, then runs) and no evaluation that began to
        wait before it has waited longer than `patience_s` (math.inf: never held back). on_wait() is called once if
        it has to wait. MemoryTimeout past `deadline`. Inside the block, resize() changes what it holds."""
        path = self.folder / f"r-{os.getpid()}-{secrets.token_hex(6)}"
        fd: int | None = None

        def create(nbytes: int) -> None:
            nonlocal fd
            fd = open_lock_file(path)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, str(nbytes).encode())

        try:
            admission = self._when_fits(nbytes, capacity, deadline, patience_s, create, False, on_wait)
            self._mine_fd, self._mine_bytes = fd, admission.reserved_bytes
            yield admission
        finally:
            self._mine_fd, self._mine_bytes = None, 0
            if fd is not None:
                with contextlib.suppress(OSError):
                    path.unlink()
                os.close(fd)

    def resize(
        self, nbytes: int, capacity: int, deadline: float, on_wait: Callable[[], None] | None = None
    ) -> Admission:
        """Change what the reservation reserve() holds declares: less at once; more once it fits beside the others,
        the reservation kept meanwhile, so an evaluation that gives most of its memory back for a while is never
        counted as gone. Growing is never held back by the patience rule: an evaluation already admitted holds a
        place that a whole-device waiter waits for, so neither would move (the replay found it: 80 timeouts in the
        full bundle); its own waiting still holds later arrivals back once overdue. MemoryTimeout past `deadline`
        (the smaller figure then still held)."""
        fd = self._mine_fd
        assert fd is not None, "resize() outside reserve()"

        def rewrite(nbytes: int) -> None:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(nbytes).encode(), 0)

        nbytes = max(0, min(int(nbytes), int(capacity)))
        if nbytes <= self._mine_bytes:
            with self._ledger():
                rewrite(nbytes)
            self._mine_bytes = nbytes
            return Admission(reserved_bytes=nbytes, capacity_bytes=int(capacity))
        admission = self._when_fits(nbytes, capacity, deadline, math.inf, rewrite, True, on_wait)
        self._mine_bytes = nbytes
        return admission

    def _when_fits(
        self,
        nbytes: int,
        capacity: int,
        deadline: float,
        patience_s: float,
        grant: Callable[[int], None],
        resizing: bool,
        on_wait: Callable[[], None] | None,
    ) -> Admission:
        """Wait until `nbytes` fits beside the other reservations (`resizing`: this ledger's own left out) and none
        that began to wait before it is overdue, then call grant(nbytes) under the ledger."""
        nbytes = max(0, min(int(nbytes), int(capacity)))
        admission = Admission(reserved_bytes=nbytes, capacity_bytes=int(capacity))
        started, arrived = time.monotonic(), time.time()
        waiter: int | None = None  # a flocked "w-" file while this admission waits (MemoryLedger.waiting)
        waiting = self.folder / f"w-{os.getpid()}-{secrets.token_hex(6)}"
        held_back_since: float | None = None
        refused, granted = False, False
        mine = 1 if resizing else 0
        try:
            while not granted:
                with self._ledger():
                    count, held = self._held()
                    count, held = count - mine, held - (self._mine_bytes if mine else 0)
                    fits = held + nbytes <= capacity or count == 0
                    behind = fits and not math.isinf(patience_s) and self._overdue(arrived, patience_s, waiting)
                    if fits and not behind:
                        grant(nbytes)
                        granted = True
                    elif waiter is None:
                        refused = True
                        admission.others_at_wait, admission.others_bytes_at_wait = count, held
                        waiter = open_lock_file(waiting)
                        fcntl.flock(waiter, fcntl.LOCK_EX)
                        os.write(waiter, f"{arrived:.3f}".encode())
                        if on_wait is not None:
                            on_wait()
                now = time.monotonic()
                if held_back_since is not None:
                    admission.held_back_s += now - held_back_since
                held_back_since = now if behind and not granted else None
                if not granted:
                    if now > deadline:
                        raise MemoryTimeout(
                            f"the GPU's memory stayed taken by other evaluations: {nbytes / 2**30:.1f} GiB did not fit"
                        )
                    time.sleep(POLL_S)
        finally:
            if waiter is not None:
                with contextlib.suppress(OSError):
                    waiting.unlink()
                os.close(waiter)
        admission.waited_s = round(time.monotonic() - started, 3) if refused else 0.0
        admission.held_back_s = round(admission.held_back_s, 3)
        return admission
