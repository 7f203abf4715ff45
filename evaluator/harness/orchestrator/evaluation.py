"""The evaluation driver (protocol.md sections 2-5): starts the clean reference worker and the candidate worker
(launch.py), runs the phases in order (setup_phase.py, correctness_phase.py, timing_phase.py, verdict.py), holds
the GPU lock around them, and returns the result record.

Each trial's secret seed is drawn in this process (each worker regenerates that trial's inputs from it; the
candidate learns it only when its trial runs). stdlib only: this process never imports torch or candidate code, so
its clock, its checks and its result channel are out of the candidate's reach.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.harness import seeds
from evaluator.harness.errors import CandidateFailed, HarnessInfraError
from evaluator.harness.orchestrator.bring_up import connect, device_context, note_reserved_peak, report_strays
from evaluator.harness.orchestrator.clients import Deadline
from evaluator.harness.orchestrator.context import Context, Emit
from evaluator.harness.orchestrator.correctness_phase import check_correctness
from evaluator.harness.orchestrator.gpu_holds import GpuHolds
from evaluator.harness.orchestrator.launched import copy_trace
from evaluator.harness.orchestrator.launched import report as launched_report
from evaluator.harness.orchestrator.out_of_memory import is_out_of_memory
from evaluator.harness.orchestrator.roofline import speed_of_light
from evaluator.harness.orchestrator.setup_phase import handover, prepare, survey
from evaluator.harness.orchestrator.timing_phase import run_timing
from evaluator.harness.orchestrator.verdict import environment, integrity, record_failure, should_time, verdict
from evaluator.harness.protocol import LaunchedKernels, Options, Record, Spec, SpeedOfLight, part
from evaluator.harness.sandbox.confine import report as confinement
from evaluator.harness.sandbox.cpu_pin import general_cpus
from evaluator.harness.sandbox.launch import Folders, Workers


class EvaluationRun:
    """One evaluation of one kernel against one problem."""

    def __init__(self, spec: Spec, emit: Emit) -> None:
        opts = Options.build(spec.options)
        if spec.device.startswith("cuda") and opts.pin_timing_cpu:
            # this process and the workers it starts stay off the CPUs set aside for timed loops (cpu_pin.py)
            with contextlib.suppress(OSError, ValueError):
                os.sched_setaffinity(0, general_cpus())
        folders = Folders.under(Path(spec.work_dir))
        self.workers = Workers(folders, spec, opts)
        self.ctx = Context(
            spec=spec,
            opts=opts,
            emit=emit,
            record=Record(),
            deadline=Deadline(float(spec.timeout)),
            folders=folders,
            workers=self.workers,
        )
        self.closed = False
        # What this evaluation holds of the GPU (memory, shared, exclusive), phase by phase (gpu_holds.py).
        self.gpu = GpuHolds(self.ctx)
        self.ctx.gate = self.gpu.command

    def run(self, ready: Callable[[], str | None] | None = None) -> Record | None:
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
                ctx.record.environment.prestarted_workers = True
                # spent before this evaluation's clock started: not part of its total
                ctx.record.phases["standby_workers"] = ctx.record.phases.pop("workers")
            # The declared memory (from what survey() counted on the meta device) is admitted before the workers
            # touch the GPU and held until they are gone; the device itself is held shared for correctness and
            # profiling, exclusive for the timed loops only (the timing phase takes its own).
            survey(ctx)
            with contextlib.ExitStack() as memory:
                memory.enter_context(self.gpu.memory(self._device_context))
                memory.callback(self._shutdown)
                prepare(ctx)
                handover(ctx)
                self.gpu.declare()
                try:
                    with self.gpu.hold("shared"):
                        check_correctness(ctx)
                    if should_time(ctx):
                        run_timing(ctx, self.gpu)
                        with self.gpu.hold("shared"):  # one profiled call per side: the GPU, but not alone
                            self._launched_kernels()
                    integrity(ctx, "at the end")
                    note_reserved_peak(ctx)
                except CandidateFailed as failure:  # judged while the memory is still held beside the others'
                    # one reading of the device: what it had free, and what the reference held (a retry declares it)
                    reading = note_reserved_peak(ctx) if is_out_of_memory(str(failure)) else {}
                    crowded = self.gpu.crowded_out(str(failure), reading)
                    if crowded:  # not the kernel's doing: evaluated again (runner.InfraError), not judged
                        raise HarnessInfraError(crowded) from failure
                    raise
            verdict(ctx)
        except CandidateFailed as failure:
            record_failure(ctx.record, failure, device=ctx.device)
        finally:
            self._shutdown()
            self.gpu.account()
        environment(ctx)
        self._speed_of_light()
        return ctx.record

    def _start_workers(self) -> None:
        """Both worker processes, their clients, and torch's first-use costs paid; their CUDA contexts are made
        once the evaluation's start is admitted to the device's memory (GpuHolds.memory)."""
        ctx = self.ctx
        self.workers.start(ctx.emit)
        assert self.workers.ref is not None and self.workers.cand is not None
        env = ctx.record.environment  # each field assigned: a null one is still written (record_fields._Part)
        env.candidate_uid = self.workers.ident[0] if self.workers.ident else None
        env.sandbox = self.workers.sandbox
        env.sandbox_reason = self.workers.sandbox_reason
        env.orchestrator = confinement()  # what this process runs with: capabilities, network (confine.py)
        connect(ctx, device_context=False)
        env.limits = {"host_memory_bytes": self.workers.memory, **self.workers.limits}
        ctx.phase("workers", ctx.deadline.start)  # part of "start": spawned, torch imported

    def _device_context(self) -> dict[str, Any]:
        """The workers' CUDA contexts (phases.device_context), and what the device is (bring_up.device_context)."""
        started = time.monotonic()
        facts = device_context(self.ctx)
        self.ctx.phase("device_context", started)
        return facts

    def _launched_kernels(self) -> None:
        """What ran: one profiled call per side, after the timed calls; CUDA only. A failure here is
        recorded, not the kernel's verdict (the integrity check after it still sees a dead or tampering worker)."""
        ctx = self.ctx
        if not ctx.cuda:
            return
        step = time.monotonic()
        traces = {"baseline": ctx.folders.ref / "trace.json", "candidate": ctx.folders.io / "trace.json"}
        want = bool(ctx.opts.profile_dir)
        try:
            baseline = ctx.ref.launched_kernels(str(traces["baseline"]) if want else None).get("events")
            candidate = ctx.cand.launched_kernels(str(traces["candidate"]) if want else None).get("events")
        except CandidateFailed as exc:
            ctx.record.launched_kernels = LaunchedKernels(error=str(exc)[:300])
            return
        finally:
            ctx.phase("profile", step)
        # launched.report builds the part as a dict (the site's tests build records from it too): parsed closed here
        report = launched_report(ctx.kernel_source, candidate, baseline)
        launched = ctx.record.launched_kernels = None if report is None else part(LaunchedKernels, report)
        if want and launched is not None:
            launched.traces = {
                side: copy_trace(path, Path(ctx.opts.profile_dir) / f"{side}-trace.json")
                for side, path in traces.items()
            }

    def _speed_of_light(self) -> None:
        """The roofline bound of the problem on this device and the kernel's fraction of it (roofline.py)."""
        ctx = self.ctx
        kernel_ms = ctx.record.timing.candidate.median_ms
        device_name = ctx.info.get("device_name") if ctx.cuda else None
        bound = speed_of_light(ctx.counts, device_name, kernel_ms)  # a dict (the site's tests build records from it)
        ctx.record.speed_of_light = None if bound is None else part(SpeedOfLight, bound)

    def _shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        started = time.monotonic()
        report_strays(self.ctx, self.workers.stop())
        if self.ctx.cache is not None:
            self.ctx.cache.release()
        self.ctx.phase("shutdown", started)


def evaluate(spec: Spec, emit: Emit | None = None, ready: Callable[[], str | None] | None = None) -> Record | None:
    """Run one evaluation and return its record (None: a standby that was not needed, see EvaluationRun.run).
    Raises HarnessInfraError only for faults that are not the kernel's."""
    return EvaluationRun(spec, emit or (lambda event: None)).run(ready)
