"""What one evaluation holds of its GPU, phase by phase: memory from before its workers touch the device until they
are gone (its declared footprint: gpu_memory.py), the device shared for correctness,
set-up, re-checks and profiling, and the device exclusive for its timed loops only (gpu_lock.py). stdlib only, like
the orchestrator.

The shared hold is taken one worker command at a time (command(), around each request the clients send): between
commands the orchestrator reads, compares and decides on the CPU, and a timer queued meanwhile waits for one
command to drain, not for a whole correctness phase (on the H200, six evaluations at once spent 10-30 s each queued
behind phase-long shared holds while their GPU sat mostly idle).

A hold is taken for a block and the previous one restored after it (`hold("shared")` inside the timed loops gives
the exclusive hold back while timed outputs are re-checked, then queues for it again), so the timing phase says at
each step what it needs and nothing holds the GPU alone by accident. Time spent queueing moves the deadline (it is
not the kernel's time) and is recorded: `phases.gpu_wait` (the activity lock), `phases.gpu_memory_wait` and
`environment.gpu_hold` (the memory admission: what was reserved and what it waited for). The exclusive hold is
accounted in `phases`: `exclusive_s` (held), `exclusive_timing_s` (the timed loops in it), `exclusive_other_s`
(the rest: taking and giving back the lock around the loops, a kept block's outputs handed over).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from evaluator.harness.commands import Command
from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.gpu_lock import DeviceLock, LockTimeout
from evaluator.harness.gpu_memory import Admission, MemoryLedger, MemoryTimeout
from evaluator.harness.orchestrator import device_facts, seen_peaks
from evaluator.harness.orchestrator.context import Context
from evaluator.harness.orchestrator.declared_memory import UNCAPPED, reservation_bytes, start_bytes
from evaluator.harness.orchestrator.out_of_memory import allocator_said, device_reading, is_out_of_memory
from evaluator.harness.record_parts import GpuHold
from evaluator.harness.sandbox.cpu_pin import CpuLease, timing_cpus
from evaluator.harness.sandbox.link import LauncherError

MODES = ("none", "shared", "exclusive")


class GpuHolds:
    """The evaluation's holds on its device. With the gpu_lock_dir option empty no other evaluation shares the
    device, and the modes are still tracked (and accounted in the record) as if they were taken."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.mode = "none"
        self._lock: DeviceLock | None = None
        self._exclusive_since: float | None = None
        self.exclusive_s = 0.0
        # The CPU set aside for timed loops (cpu_pin.py), leased with every exclusive hold and its workers pinned
        # to it: one timer per GPU at a time, so the lease waits for nobody. What the last hold got, for the record.
        self._lease: CpuLease | None = None
        self._ledger: MemoryLedger | None = None  # set while memory is reserved on a shared device
        self._declared = (0, 0)  # (bytes reserved, capacity) while it is
        self.last_growth_wait_s = 0.0  # declaration_cut's wait to grow back
        self._estimate = (0, 0)  # (the two workers' estimate uncapped, the capacity) once declare() has run
        self._seen: int | None = None  # seen_bytes(), once read
        self._facts: dict[str, Any] = {}  # the device's UUID and total memory before the reference reports them
        self._longest_wait_s = -1.0  # the longest memory admission's wait so far (the record names what it was for)
        self._memory_wait = (0.0, "nothing: no memory admission (no lock folder, or no device memory to share)")
        self.cpu: int | None = None
        self.cpu_why = "not CUDA" if not ctx.cuda else "pin_timing_cpu off"
        self.pinned: dict[str, int] = {}
        self.commands: dict[str, dict[str, int]] = {}  # hold -> worker command -> how many ran under it

    def _key(self) -> str:
        info = self.ctx.info or self._facts
        return str(info.get("uuid") or info.get("device_name") or ("gpu" if self.ctx.cuda else "cpu"))

    def _device_lock(self) -> DeviceLock | None:
        if self._lock is None and self.ctx.opts.gpu_lock_dir:
            self._lock = DeviceLock(self.ctx.opts.gpu_lock_dir, self._key())
        return self._lock

    def _switch(self, new: str) -> None:
        """Give back what is held and take `new` (queueing like anyone else)."""
        if self.mode == new:
            return
        if self.mode == "exclusive":
            self._give_timing_cpu()
            if self._exclusive_since is not None:
                self.exclusive_s += time.monotonic() - self._exclusive_since
                self._exclusive_since = None
        lock = self._device_lock()
        if lock is not None:
            lock.release()
        self.mode = "none"
        if new == "exclusive" and lock is not None:
            before = lock.waited_s
            try:
                lock.acquire(new, self.ctx.deadline.at + 3600)
            except LockTimeout as exc:
                raise HarnessInfraError(str(exc)) from exc
            finally:
                self._waited("gpu_wait", lock.waited_s - before)
        self.mode = new
        if new == "exclusive":
            self._exclusive_since = time.monotonic()  # held from here, not while queued
            self._take_timing_cpu()

    def _take_timing_cpu(self) -> None:
        if not (self.ctx.cuda and self.ctx.opts.pin_timing_cpu):
            return
        self._lease = CpuLease()
        try:
            self.cpu = self._lease.acquire(set(timing_cpus()))
        except (OSError, RuntimeError) as exc:  # no slots folder: time unpinned, and say why
            self.cpu, self.cpu_why = None, str(exc)[:200]
            return
        if self.cpu is None:
            self.cpu_why = "no CPU free to lease"
            return
        self.cpu_why = "both workers on one CPU set aside for timed loops"
        self.pinned = self.ctx.workers.pin(self.cpu)  # by the launcher: the kernel's threads are another user's

    def _give_timing_cpu(self) -> None:
        """The workers back on the CPUs outside timed loops, and the timing CPU free for the next timer."""
        if self._lease is None:
            return
        if self._lease.cpu is not None:
            with contextlib.suppress(LauncherError, OSError):  # a pair that ended meanwhile has nothing to move
                self.ctx.workers.unpin()
        self._lease.release()
        self._lease = None

    @contextlib.contextmanager
    def hold(self, mode: str) -> Iterator[str]:
        """Hold the device in `mode` for the block, then return to what was held before. When the block raises,
        everything is given back instead (the evaluation is ending: nothing is queued for again)."""
        if mode not in MODES:
            raise ValueError(f"unknown GPU hold {mode!r}")
        previous = self.mode
        self._switch(mode)
        try:
            yield mode
        except BaseException:
            self._switch("none")
            raise
        self._switch(previous)

    @contextlib.contextmanager
    def command(self, cmd: Command) -> Iterator[None]:
        """Around one worker command: under the shared hold, the device is taken shared for the command only;
        under the exclusive hold it is already held; with no hold, nothing is taken. Counted by hold, for the
        record (`environment.gpu_hold.commands`: which commands ran under which hold)."""
        counts = self.commands.setdefault(self.mode, {})
        counts[cmd.value] = counts.get(cmd.value, 0) + 1
        lock = self._device_lock()
        if self.mode != "shared" or lock is None or lock.mode != "none":
            yield
            return
        before = lock.waited_s
        try:
            lock.acquire("shared", self.ctx.deadline.at + 3600)
        except LockTimeout as exc:
            raise HarnessInfraError(str(exc)) from exc
        finally:
            self._waited("gpu_wait", lock.waited_s - before)
        try:
            yield
        finally:
            lock.release()

    @contextlib.contextmanager
    def memory(self, make_contexts: Callable[[], dict[str, Any]]) -> Iterator[None]:
        """Hold the evaluation's memory on the device until the block ends (its workers gone by then): its whole
        declaration (reservation_bytes, from what setup_phase.survey() counted on the meta device), admitted beside
        the other evaluations' declarations (gpu_memory.MemoryLedger) before any worker touches the device; then
        make_contexts(). Made before their admission, waiting evaluations' contexts were memory no declaration
        counted: on an 80 GB H100 a whole-device declaration ran out of memory beside 9.3 GiB of them
        (standby-context-h100-2026-12-06.md). Admitted whole, not as a start grown later: two whole-device
        evaluations whose starts were both admitted each waited for the other to leave (the replay found it: 29
        timeouts in the full bundle, replay.md). The device's UUID and size come from a file in the lock folder
        that the first evaluation on the device wrote (they are known only from a context): that first one makes
        its contexts before its admission."""
        ctx = self.ctx
        facts_path = device_facts.path(ctx.opts.gpu_lock_dir) if ctx.cuda else None
        self._facts = device_facts.read(facts_path)
        made = ctx.cuda and not self._facts
        if made:
            self._facts = make_contexts()
            device_facts.write(facts_path, self._facts)
        capacity = self._capacity()
        if not capacity or not ctx.opts.gpu_lock_dir:
            if not made:
                make_contexts()
            yield
            return
        ledger = MemoryLedger(ctx.opts.gpu_lock_dir, self._key())
        try:
            with ledger.reserve(
                min(self._need(), capacity),
                capacity,
                ctx.deadline.at + 3600,
                ctx.opts.gpu_memory_patience_s,
                self._waiting_for_memory,
            ) as admission:
                self._admitted(admission, "gpu_memory_wait_start")
                self._ledger, self._declared = ledger, (admission.reserved_bytes, capacity)
                try:
                    if not made:
                        make_contexts()
                    yield
                finally:
                    self._ledger = None
        except MemoryTimeout as exc:
            raise HarnessInfraError(str(exc)) from exc

    def _need(self) -> int:
        """The two workers' declaration before the device caps it (reservation_bytes)."""
        ctx = self.ctx
        counts = ctx.counts or {}
        return reservation_bytes(
            footprint=ctx.footprint,
            peak_bytes=int(counts.get("peak_bytes") or 0),
            input_sets=ctx.opts.input_sets,
            capacity=UNCAPPED,
            cuda=ctx.cuda,
            declared_mb=ctx.opts.gpu_memory_reserve_mb,
            seen_bytes=self.seen_bytes(),
            output_bytes=int(counts.get("output_bytes") or 0),
            param_bytes=int(counts.get("param_bytes") or 0),
        )

    def seen_bytes(self) -> int:
        """What a reference worker of this problem was seen to hold of this device at its most (seen_peaks.py), read
        once (after survey() named the problem), so the admission and the record give the same figure while
        another evaluation of the problem writes a new one."""
        if self._seen is None:
            ctx = self.ctx  # only a GPU's reference worker reads its peak (bring_up.note_reserved_peak): none on a CPU
            self._seen = seen_peaks.read(seen_peaks.path(ctx.opts.gpu_lock_dir, ctx.record.environment.problem_sha256))
        return self._seen

    def declare(self) -> None:
        """The declaration in the record (`environment.gpu_hold`: what was reserved, of what, for which footprint,
        and the admissions' waits), once the reference has reported the device; a stale device-facts file righted."""
        ctx = self.ctx
        capacity = self._capacity()
        need = self._need()
        if capacity and ctx.footprint is not None:  # an unknown size is not an estimate that exceeds the device
            self._estimate = (need, capacity)
        if ctx.cuda and ctx.info.get("uuid") and ctx.info.get("uuid") != self._facts.get("uuid"):  # a stale file
            device_facts.write(device_facts.path(ctx.opts.gpu_lock_dir), ctx.info)
        # assigned field by field: a null one is still written (record_fields._Part.__setattr__)
        hold = ctx.record.environment.gpu_hold = GpuHold()
        hold.reserved_bytes = min(need, capacity) if capacity else None
        hold.capacity_bytes = capacity
        hold.footprint_bytes = ctx.footprint
        if seen := self.seen_bytes():  # assigned only when there is one: CPU records keep their keys
            hold.seen_peak_bytes = seen
        hold.waited_s, hold.waited_for = self._memory_wait

    def _admitted(self, admission: Admission, phase: str = "") -> None:
        """An admission's wait, for the record: declare() writes the waits' sum and what the longest one waited for
        (`environment.gpu_hold`)."""
        waited, why = self._memory_wait
        if admission.waited_s > self._longest_wait_s:
            why, self._longest_wait_s = admission.describe(), admission.waited_s
        self._memory_wait = (round(waited + admission.waited_s, 3), why)
        self._waited("gpu_memory_wait", admission.waited_s)
        if phase:
            self.ctx.record.phases[phase] = admission.waited_s

    @contextlib.contextmanager
    def declaration_cut(self) -> Iterator[None]:
        """Around a later process pair's start (the old workers end, new ones start and build the reference), the
        declaration cut to what a start holds (start_bytes: CUDA contexts and the model's state), and when the
        block ends normally grown back once it fits (`last_growth_wait_s`), not held back by the patience rule,
        which still holds later arrivals back behind it once it has waited that long. Held whole through
        it, a big problem's declaration sat idle while others waited for memory (benchmarks/results/replay.md).
        Never given back whole: on an H100 (2026-12-06) a whole-device declaration admitted while its neighbours
        were all starting pairs ran out of memory beside their fresh workers, and a neighbour invisible to the
        ledger is one crowded_out cannot name. A failure is not admitted again: it ends the evaluation."""
        self.last_growth_wait_s = 0.0
        if self._ledger is None:
            yield
            return
        reserved, capacity = self._declared
        self._ledger.resize(min(reserved, self.start_bytes()), capacity, self.ctx.deadline.at)  # less: at once
        yield
        try:  # never held back by the patience rule (MemoryLedger.resize says why)
            admission = self._ledger.resize(reserved, capacity, self.ctx.deadline.at + 3600, self._waiting_for_memory)
        except MemoryTimeout as exc:
            raise HarnessInfraError(str(exc)) from exc
        self._waited("gpu_memory_wait", admission.waited_s)
        self.last_growth_wait_s = admission.waited_s

    def start_bytes(self) -> int:
        ctx = self.ctx
        return start_bytes(int((ctx.counts or {}).get("param_bytes") or 0), ctx.cuda)

    def others(self) -> tuple[int, int]:
        """(evaluations, declared bytes) of the others holding memory on this device now; (0, 0) when the device
        is not shared (no memory admission)."""
        return self._ledger.others() if self._ledger else (0, 0)

    def crowded_out(self, failure: str, reading: Mapping[str, Any] | None = None) -> str:
        """Why a kernel's out-of-memory failure is not its own ('' when it is): the problem's own estimate (the
        reference's, never the kernel's) exceeds what the device gives evaluations, so an honest kernel beside the
        reference worker can run out alone (L1/19's 6.4 GB tensors on an 80 GB H100); or the device was shared
        with other evaluations at the time, whose memory may have exceeded what they declared. The evaluation is
        then an infrastructure error (retried by the site), not a verdict; alone on a device that fits the
        estimate, running out is the kernel's. `reading` (the reference worker's, never the kernel's: what
        bring_up.note_reserved_peak read) adds what the device had free just after, so the record says whether it
        was full."""
        if not is_out_of_memory(failure):
            return ""
        need, capacity = self._estimate
        if need > capacity:
            return (
                f"the kernel ran out of device memory on a problem whose two workers need an estimated "
                f"{need / 2**30:.1f} GiB, more than the {capacity / 2**30:.1f} GiB this device gives evaluations"
                f"{device_reading(reading or {})}: the device is too small for it, not judged (evaluate it on a larger "
                "one)"
            )
        others, held = self.others()
        if not others:
            return ""
        return (
            f"the kernel ran out of device memory while {others} other evaluations held {held / 2**30:.1f} GiB "
            f"of the GPU beside it{device_reading(reading or {})}; evaluated again, not judged{allocator_said(failure)}"
        )

    def _capacity(self) -> int | None:
        """The device memory evaluations may declare in all: the gpu_memory_budget_mb option, else (CUDA) the
        device's total times gpu_memory_budget_fraction; on the CPU none unless the option sets one."""
        opts = self.ctx.opts
        if opts.gpu_memory_budget_mb > 0:
            return int(opts.gpu_memory_budget_mb * 2**20)
        total = (self.ctx.info or self._facts).get("total_memory_bytes") if self.ctx.cuda else None
        return int(total * opts.gpu_memory_budget_fraction) if total else None

    def _waiting_for_memory(self) -> None:
        """A memory admission has begun to wait: the runner's backstop stops counting until it ends (its
        `gpu_memory_wait` event), so an honest kernel queued behind other evaluations is never killed as a
        timeout (runner.py)."""
        self.ctx.emit({"event": "gpu_memory_waiting"})

    def _waited(self, phase: str, seconds: float) -> None:
        """Time queued for the GPU: moves the deadline, and is recorded in `phases`."""
        ctx = self.ctx
        ctx.deadline.extend(seconds)
        phases = ctx.record.phases
        phases[phase] = round((phases.get(phase) or 0.0) + seconds, 3)
        if seconds:
            ctx.emit({"event": phase, "seconds": seconds})

    def account(self) -> None:
        """The exclusive hold's phases: what of it was timed loops, and what was not."""
        if self._exclusive_since is not None:
            self.exclusive_s += time.monotonic() - self._exclusive_since
            self._exclusive_since = time.monotonic()
        phases = self.ctx.record.phases
        loops = sum(v for k, v in phases.items() if k.startswith("timing_loop") and isinstance(v, int | float))
        held = self.exclusive_s
        phases["exclusive_s"] = round(held, 3)
        phases["exclusive_timing_s"] = round(min(loops, held), 3)
        phases["exclusive_other_s"] = round(max(held - loops, 0.0), 3)
        phases.setdefault("pair_starts_under_exclusive_lock", 0)
        env = self.ctx.record.environment
        if env.gpu_hold is None:
            env.gpu_hold = GpuHold()
        env.gpu_hold.commands = self.commands
