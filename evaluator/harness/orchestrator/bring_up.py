"""Bringing a worker pair to where the phases start: the one path for the first pair (evaluation.py) and every
later process pair of the timing phase (timing_phase.py). stdlib only, like the orchestrator.

The first pair also records what it learned (setup_phase.prepare: device facts, the build); a later pair is the
same kernel re-imported in fresh processes, so it only checks that nothing changed and records nothing twice.
"""

from __future__ import annotations

from typing import Any

from evaluator.harness.errors import CandidateFailed, HarnessInfraError
from evaluator.harness.orchestrator import device_facts, seen_peaks
from evaluator.harness.orchestrator.clients import CandidateClient, ReferenceClient
from evaluator.harness.orchestrator.context import Context
from evaluator.harness.orchestrator.correctness_phase import randomise
from evaluator.harness.orchestrator.setup_phase import build_reference, handover, import_kernel
from evaluator.harness.orchestrator.verdict import integrity
from evaluator.harness.record_parts import GpuHold


def connect(ctx: Context, *, device_context: bool = True) -> None:
    """Clients for the pair's two processes, and their first-use costs paid (torch imported, CUDA contexts made;
    without `device_context` torch's only: the first pair makes its contexts once its memory is admitted,
    device_context()). No kernel code has run in either yet: a failure here is ours, not the kernel's."""
    workers = ctx.workers
    assert workers.ref is not None and workers.cand is not None
    ctx.ref = ReferenceClient(workers.ref, ctx.deadline, gate=ctx.gate)
    ctx.cand = CandidateClient(
        workers.cand,
        ctx.deadline,
        ctx.ref,
        hang_factor=ctx.opts.hang_factor,
        hang_grace_s=ctx.opts.hang_grace_s,
        gate=ctx.gate,
        load_s=ctx.opts.load_timeout_s,
        build_s=ctx.opts.load_cold_timeout_s,
    )
    _warm_up(ctx, ctx.device if device_context else "cpu", meta=True)


def device_context(ctx: Context) -> dict[str, Any]:
    """Both workers' CUDA contexts, for a pair connected without them; what the device is (its UUID and total
    memory, from the reference worker), or {} off CUDA."""
    return _warm_up(ctx, ctx.device, meta=False) if ctx.cuda else {}


def _warm_up(ctx: Context, device: str, *, meta: bool) -> dict[str, Any]:
    facts = ctx.ref.warm_up(device, meta=meta)
    try:
        ctx.cand.warm_up(device)
    except CandidateFailed as exc:
        raise HarnessInfraError(f"candidate worker failed before the kernel was loaded: {exc}") from exc
    return {k: facts[k] for k in device_facts.FACTS if facts.get(k) is not None}


def report_strays(ctx: Context, stray: int) -> None:
    """Processes the kernel started that outlived its worker (killed by the worker's stop) fail containment."""
    if stray:
        detail = f"{stray} processes started by the kernel outlived its worker and were killed"
        ctx.record.set_check("process_containment", False, detail)


def end_pair(ctx: Context) -> None:
    """The old candidate's integrity report read, then both workers ended and reaped (their device memory free
    once this returns: only then may the evaluation's declaration be cut, gpu_holds.declaration_cut)."""
    integrity(ctx, "before its process pair was replaced")
    note_reserved_peak(ctx)
    report_strays(ctx, ctx.workers.end_pair())


def note_reserved_peak(ctx: Context) -> dict[str, Any]:
    """The reference worker's reading of the device (workers/device.device_memory; {} on the CPU or when it cannot
    be read: the phases decide). The most its allocator held of the device (cached blocks included: what the
    device's other evaluations meet) is kept at its highest over the evaluation's process pairs in
    `environment.gpu_hold`, beside what was declared for each worker and with the commands that raised it, and in the
    lock folder for the problem's next evaluation on the device (seen_peaks.py); what the device had free goes into
    a crowded-out error."""
    if not ctx.cuda:
        return {}
    try:
        reading = dict(ctx.ref.device_memory())
    except (CandidateFailed, HarnessInfraError):
        return {}
    peak = reading.get("reserved_peak_bytes")
    if not isinstance(peak, int) or isinstance(peak, bool):
        return reading
    env = ctx.record.environment
    hold = env.gpu_hold = env.gpu_hold or GpuHold()
    hold.reference_reserved_peak_bytes = max(peak, hold.reference_reserved_peak_bytes or 0)
    steps = reading.get("reserved_peak_by_command")
    if isinstance(steps, dict) and steps:  # the most each command raised it to, over the pairs
        merged = dict(hold.reference_reserved_peak_by_command or {})
        for name, raised in steps.items():
            if isinstance(raised, int) and not isinstance(raised, bool):
                merged[str(name)] = max(raised, merged.get(str(name), 0))
        hold.reference_reserved_peak_by_command = merged
    seen_peaks.remember(seen_peaks.path(ctx.opts.gpu_lock_dir, env.problem_sha256), peak)  # the next one declares it
    return reading


def fresh_pair(ctx: Context) -> None:
    """Fresh processes in place of the pair end_pair() ended, brought to where timing starts: the reference
    re-created (seed 42, then the same randomised parameters), the kernel re-imported in a fresh sandboxed worker
    (its build reused), the output hand-over chosen again."""
    ctx.workers.spawn_pair(ctx.emit)
    connect(ctx)
    build_reference(ctx)
    import_kernel(ctx)
    integrity(ctx, "after re-import")
    if ctx.params_seed is not None:
        randomise(ctx, seed=ctx.params_seed)
    handover(ctx)
