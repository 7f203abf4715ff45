"""The evaluation driver (protocol.md sections 2-5): starts the clean reference worker and the candidate worker
(launch.py), runs the phases in order (setup_phase.py, correctness_phase.py, timing_phase.py, verdict.py), holds
the GPU lock around them, and returns the result record.

Each trial's secret seed is drawn in this process (each worker regenerates that trial's inputs from it; the
candidate learns it only when its trial runs). stdlib only: this process never imports torch or candidate code, so
its clock, its checks and its result channel are out of the candidate's reach.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evaluator.harness import seeds
from evaluator.harness.errors import CandidateFailed, HarnessInfraError
from evaluator.harness.gpu_lock import DeviceLock, LockTimeout
from evaluator.harness.orchestrator.bring_up import connect, report_strays
from evaluator.harness.orchestrator.clients import Deadline
from evaluator.harness.orchestrator.context import Context, Emit
from evaluator.harness.orchestrator.correctness_phase import check_correctness
from evaluator.harness.orchestrator.launched import copy_trace
from evaluator.harness.orchestrator.launched import report as launched_report
from evaluator.harness.orchestrator.roofline import speed_of_light
from evaluator.harness.orchestrator.setup_phase import handover, prepare
from evaluator.harness.orchestrator.timing_phase import run_timing
from evaluator.harness.orchestrator.verdict import environment, integrity, record_failure, should_time, verdict
from evaluator.harness.protocol import Options, Spec, empty_result
from evaluator.harness.sandbox.confine import report as confinement
from evaluator.harness.sandbox.launch import Folders, Workers


class EvaluationRun:
    """One evaluation of one kernel against one problem."""

    def __init__(self, spec: Spec, emit: Emit) -> None:
        opts = Options.build(spec.options)
        folders = Folders.under(Path(spec.work_dir))
        self.workers = Workers(folders, spec, opts)
        self.ctx = Context(
            spec=spec,
            opts=opts,
            emit=emit,
            record=empty_result(),
            deadline=Deadline(float(spec.timeout)),
            folders=folders,
            workers=self.workers,
        )
        self.closed = False
        # What this evaluation holds of the GPU now: "none", "shared", "exclusive", or "released" (exclusive given
        # back while a new process pair starts). Tracked whether or not a lock file is used (no gpu_lock_dir: every
        # evaluation acts alone), so the record's phases say what ran under the exclusive hold either way.
        self.lock_state = "none"
        self._lock: DeviceLock | None = None
        self._exclusive_since: float | None = None
        self._exclusive_s = 0.0

    def run(self, ready: Callable[[], str | None] | None = None) -> dict[str, Any] | None:
        """Evaluate; never raises for anything the candidate did (HarnessInfraError is the only way out).

        With `ready`, the workers start (and import torch) first and the evaluation waits for ready() to return:
        a standby harness, started while the previous evaluation runs, so that the next one skips process start-up.
        The problem and kernel files are read only after that, and the clock starts then. ready() returning None
        means the standby was not needed: nothing is evaluated and None is returned; otherwise it returns the
        evaluation's master seed (seeds.py: the site's, handed over only now), or "" to keep the spec's.
        """
        ctx = self.ctx
        try:
            self._start_workers()
            if ready is not None:
                master = ready()
                if master is None:
                    return None
                if master:  # no seed has been derived yet: the trials start after this
                    try:
                        ctx.master_seed = seeds.check(master)
                    except ValueError as exc:
                        raise HarnessInfraError(f"the master seed handed to the standby: {exc}") from exc
                ctx.deadline.restart()
                ctx.record["environment"]["prestarted_workers"] = True
                # spent before this evaluation's clock started: not part of its total
                ctx.record["phases"]["standby_workers"] = ctx.record["phases"].pop("workers")
            prepare(ctx)
            handover(ctx)
            # Gigabyte tensors (or unknown sizes) take one exclusive stretch around every phase, so no other
            # evaluation's memory sits on the device; the phases' own holds are then nothing more.
            alone = not self._shares_gpu()

            def hold(mode: str) -> contextlib.AbstractContextManager[None]:
                return self._gpu("none" if alone else mode)

            with self._gpu("exclusive" if alone else "none"):
                with hold("shared"):
                    check_correctness(ctx)
                if should_time(ctx):
                    with hold("exclusive"):
                        run_timing(ctx, outside_lock=self._outside_lock)
                    with hold("shared"):  # one profiled call per side: the GPU, but not alone
                        self._launched_kernels()
                integrity(ctx, "at the end")
            verdict(ctx)
        except CandidateFailed as failure:
            record_failure(ctx.record, failure, device=ctx.device)
        finally:
            self._shutdown()
        environment(ctx)
        self._speed_of_light()
        return ctx.record

    def _start_workers(self) -> None:
        """Both worker processes, their clients, and first-use costs paid (torch imported, CUDA context made)."""
        ctx = self.ctx
        self.workers.start(ctx.emit)
        assert self.workers.ref is not None and self.workers.cand is not None
        ctx.record["environment"].update(
            candidate_uid=self.workers.ident[0] if self.workers.ident else None,
            sandbox=self.workers.sandbox,
            sandbox_reason=self.workers.sandbox_reason,
            orchestrator=confinement(),  # what this process runs with: capabilities, network (confine.py)
        )
        connect(ctx)
        ctx.record["environment"]["limits"] = {"host_memory_bytes": self.workers.memory, **self.workers.limits}
        ctx.phase("workers", ctx.deadline.start)  # part of "start": spawned, torch imported, CUDA context made

    def _launched_kernels(self) -> None:
        """What ran: one profiled call per side, after the timed calls; CUDA only. A failure here is
        recorded, not the kernel's verdict (the integrity check after it still sees a dead or tampering worker)."""
        ctx = self.ctx
        if not ctx.cuda:
            return
        traces = {"baseline": ctx.folders.ref / "trace.json", "candidate": ctx.folders.io / "trace.json"}
        want = bool(ctx.opts.profile_dir)
        try:
            baseline = ctx.ref.launched_kernels(str(traces["baseline"]) if want else None).get("events")
            candidate = ctx.cand.launched_kernels(str(traces["candidate"]) if want else None).get("events")
        except CandidateFailed as exc:
            ctx.record["launched_kernels"] = {"error": str(exc)[:300]}
            return
        ctx.record["launched_kernels"] = launched_report(ctx.kernel_source, candidate, baseline)
        if want:
            ctx.record["launched_kernels"]["traces"] = {
                side: copy_trace(path, Path(ctx.opts.profile_dir) / f"{side}-trace.json")
                for side, path in traces.items()
            }

    def _speed_of_light(self) -> None:
        """The roofline bound of the problem on this device and the kernel's fraction of it (roofline.py)."""
        ctx = self.ctx
        kernel_ms = (ctx.record.get("timing") or {}).get("candidate", {}).get("median_ms")
        device_name = ctx.info.get("device_name") if ctx.cuda else None
        ctx.record["speed_of_light"] = speed_of_light(ctx.counts, device_name, kernel_ms)

    def _shares_gpu(self) -> bool:
        """Small evaluations run correctness alongside others; gigabyte tensors (or unknown sizes) do not."""
        footprint = self.ctx.footprint
        return footprint is not None and footprint <= self.ctx.opts.gpu_share_max_mb << 20

    @contextlib.contextmanager
    def _gpu(self, mode: str) -> Iterator[None]:
        """Share the GPU for correctness, own it for timing (see gpu_lock.py). Time spent queueing is added to the
        deadline: it is not the kernel's time. With gpu_lock_dir set the lock is taken on CPU too (the device key
        "cpu"): the tests exercise the same hold and release as a GPU machine.

        The exclusive hold is accounted in the record's phases: `exclusive_s` (held), `exclusive_timing_s` (the
        timed loops in it), `exclusive_other_s` (set-up, probes, re-checks; with gigabyte tensors also correctness
        and profiling: the rest), and
        `pair_starts_under_exclusive_lock` (0: every later process pair started with the GPU given back)."""
        ctx = self.ctx
        if mode == "none":
            yield
            return
        self.lock_state = mode
        if mode == "exclusive":
            self._exclusive_since, self._exclusive_s = time.monotonic(), 0.0
        try:
            if not ctx.opts.gpu_lock_dir:
                yield
                return
            key = ctx.info.get("uuid") or ctx.info.get("device_name") or ("gpu" if ctx.cuda else "cpu")
            lock = DeviceLock(ctx.opts.gpu_lock_dir, key)
            with contextlib.ExitStack() as stack:
                try:
                    stack.enter_context((lock.shared if mode == "shared" else lock.exclusive)(ctx.deadline.at + 3600))
                except LockTimeout as exc:
                    raise HarnessInfraError(str(exc)) from exc
                if mode == "exclusive":
                    self._lock, self._exclusive_since = lock, time.monotonic()  # held from here, not while queued
                    stack.callback(setattr, self, "_lock", None)
                self._waited(lock.waited_s)
                if mode == "exclusive" and not self._shares_gpu():
                    # gigabyte tensors: the workers go before the lock does, their device memory with them (small
                    # evaluations exit after the release, so the next timer does not wait for two processes to end)
                    stack.callback(self._shutdown)
                yield
        finally:
            if mode == "exclusive":
                self._account_exclusive()
            self.lock_state = "none"

    def _waited(self, seconds: float) -> None:
        """Time queued for the GPU: moves the deadline, and is recorded (phases.gpu_wait)."""
        ctx = self.ctx
        ctx.deadline.extend(seconds)
        phases = ctx.record["phases"]
        phases["gpu_wait"] = round(phases.get("gpu_wait", 0.0) + seconds, 3)
        ctx.emit({"event": "gpu_wait", "seconds": seconds})

    def _pause_exclusive(self) -> None:
        if self._exclusive_since is not None:
            self._exclusive_s += time.monotonic() - self._exclusive_since
            self._exclusive_since = None

    def _account_exclusive(self) -> None:
        """The exclusive hold's phases (see _gpu): what of it was timing loops, and what was not."""
        self._pause_exclusive()
        phases = self.ctx.record["phases"]
        held = self._exclusive_s
        loops = sum(v for k, v in phases.items() if k.startswith("timing_loop") and isinstance(v, int | float))
        phases["exclusive_s"] = round(held, 3)
        phases["exclusive_timing_s"] = round(min(loops, held), 3)
        phases["exclusive_other_s"] = round(max(held - loops, 0.0), 3)
        phases.setdefault("pair_starts_under_exclusive_lock", 0)

    @contextlib.contextmanager
    def _outside_lock(self) -> Iterator[str]:
        """Around a new process pair's start (timing_phase): the exclusive hold is given back while the old pair
        ends and the new one starts and warms up (torch import, CUDA context, the kernel re-imported from its
        build), then taken again, queueing like any timer (the wait extends the deadline). Yields the hold the start
        ran under ("released"; anything else would be counted in phases.pair_starts_under_exclusive_lock)."""
        phases = self.ctx.record["phases"]
        if self.lock_state != "exclusive":
            yield self.lock_state
            return
        self._pause_exclusive()
        self.lock_state = "released"
        lock = self._lock
        before = lock.waited_s if lock is not None else 0.0
        try:
            with lock.released(self.ctx.deadline.at + 3600) if lock is not None else contextlib.nullcontext():
                yield "released"
        except LockTimeout as exc:
            raise HarnessInfraError(str(exc)) from exc
        finally:
            self.lock_state = "exclusive"
            self._exclusive_since = time.monotonic()
            phases.setdefault("pair_starts_under_exclusive_lock", 0)
        if lock is not None:
            self._waited(lock.waited_s - before)

    def _shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        started = time.monotonic()
        report_strays(self.ctx, self.workers.stop())
        if self.ctx.cache is not None:
            self.ctx.cache.release()
        self.ctx.phase("shutdown", started)


def evaluate(
    spec: Spec, emit: Emit | None = None, ready: Callable[[], str | None] | None = None
) -> dict[str, Any] | None:
    """Run one evaluation and return its record (None: a standby that was not needed, see EvaluationRun.run).
    Raises HarnessInfraError only for faults that are not the kernel's."""
    return EvaluationRun(spec, emit or (lambda event: None)).run(ready)
