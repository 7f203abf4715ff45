"""The checks and the verdict of an evaluation (the record: docs/protocol.md section 8): the kernel's integrity report
read at each phase's end, whether it is worth timing, the runtime signals turned into checks, the status, and the
record's environment section.

stdlib only, like the orchestrator: the verdict is made in the one process the candidate cannot reach.
"""

from __future__ import annotations

import re
import time
from typing import Any

from evaluator.harness import seeds
from evaluator.harness.errors import CandidateFailed
from evaluator.harness.orchestrator.context import Context
from evaluator.harness.protocol import (
    HALF_PRECISION_TOLERANCE,
    HARD_CHECKS,
    HARNESS_VERSION,
    STANDARD_TOLERANCE,
    VERIFIED_TOLERANCE,
    Record,
    shorten,
)
from evaluator.harness.record import EnvOptions, Tolerances


def integrity(ctx: Context, when: str) -> None:
    """Replaced timer or checker functions and threads the kernel started, as reported by its own worker (it may
    lie; a failure once seen is never overwritten by a later clean report)."""
    record = ctx.record
    reply = ctx.cand.integrity()
    _precision_flags(ctx, reply.get("precision_flags"))
    tampered, threads = reply["tampered"], sorted(set(reply["threads"]))
    prior = record.check("timer_integrity")
    if tampered or not (prior and prior.passed is False):
        record.set_check(
            "timer_integrity",
            not tampered,
            f"replaced {when}: {', '.join(tampered)[:300]}"
            if tampered
            else f"timer and checker functions unchanged ({when})",
        )
    prior = record.check("thread_count")
    if threads or not (prior and prior.passed is False):
        native = f"; native threads {reply['native_at_start']} -> {reply['native_threads']}"
        record.set_check(
            "thread_count",
            not threads,
            (
                f"Python threads started by the kernel ({when}): {', '.join(threads)[:200]}"
                if threads
                else f"no Python threads started by the kernel ({when})"
            )
            + native,
        )


def _precision_flags(ctx: Context, candidate: Any) -> None:
    """The precision flags each phase ran under, as each worker read them back right before its calls: correctness
    under the reference's full FP32 on both sides, timing under the verified (TF32) baseline's flags on both sides
    (the FP32 baseline's own under timing_fp32). A phase not run reads null.

    Each process pair's workers know only the calls they made: a later pair (timing_phase, bring_up.fresh_pair)
    never ran correctness, and only the first times the FP32 baseline. So what a worker reads back is merged into
    what earlier pairs recorded, a phase's flags replaced only by flags read back again, never by a null."""
    reference = ctx.ref.precision_flags().get("flags") or {}
    candidate = candidate if isinstance(candidate, dict) else {}
    seen = {
        "correctness": {"reference": reference.get("correctness"), "candidate": candidate.get("correctness")},
        "timing": {
            "reference": reference.get("timing"),
            "candidate": candidate.get("timing"),
            "reference_fp32": reference.get("timing_fp32"),
        },
    }
    before = ctx.record.environment.precision_flags or {}
    for phase, sides in seen.items():
        earlier = before.get(phase)
        earlier = earlier if isinstance(earlier, dict) else {}
        for side, flags in sides.items():
            if flags is None:
                sides[side] = earlier.get(side)
    ctx.record.environment.precision_flags = seen


def should_time(ctx: Context) -> bool:
    """Time only a kernel that passed a gate and showed no sign of cheating the harness."""
    flags = ctx.flags
    hard_fail = flags["alias"] or not flags["plain"] or not flags["unchanged"]
    evidence = (
        ctx.record.check("timer_integrity"),
        ctx.record.check("thread_count"),
        ctx.record.check("refilled_inputs"),
    )
    if hard_fail or any(found and found.passed is False for found in evidence):
        return False
    return bool(ctx.record.correct or ctx.record.standard_correct)


def verdict(ctx: Context) -> None:
    """The runtime signals as checks, then the status: "rejected" on a failed hard check, else "ok"."""
    record, flags, details = ctx.record, ctx.flags, ctx.flag_details
    record.set_check(
        "output_plain_tensor",
        flags["plain"],
        details.get("plain", "every output was a plain torch.Tensor"),
    )
    record.set_check(
        "output_no_alias",
        not flags["alias"],
        "an output shared storage with an input" if flags["alias"] else "no output aliased an input",
    )
    record.set_check(
        "inputs_unchanged",
        flags["unchanged"],
        "inputs were unchanged after every call" if flags["unchanged"] else "the kernel modified its inputs in place",
    )
    record.set_check(
        "output_shape_dtype",
        flags["shape_dtype"],
        details.get("shape_dtype", "shape and dtype matched the reference"),
    )
    failed_hard = [c.name for c in record.checks if c.name in HARD_CHECKS and c.passed is False]
    recheck = record.check("timed_output_recheck")
    if record.correct and recheck and recheck.passed is False:
        # passed the gate, yet wrong beyond any precision effect while being timed: it behaves differently when
        # timed (A6 replay, A7); a precision-sized miss there is judged below, as the gate judges one
        failed_hard.append("timed_output_recheck")
    if failed_hard:
        record.status = "rejected"
        record.correct = False
        record.standard_correct = False
        record.error = "rejected by runtime checks: " + ", ".join(failed_hard)
        return
    record.status = "ok"
    timed = record.timed_outputs
    if record.correct and timed and timed.passed is False:
        record.correct = False  # one criterion: a precision-sized miss in timed outputs is `incorrect` too
    if not record.correct:
        failed = [f"{d.name}: {d.error}" for d in record.distributions if d.passed is False]
        mixed = record.check("mixed_sign_inputs")
        if mixed and mixed.passed is False:
            failed.append(f"mixed signs: {mixed.detail}")
        if "refilled_miss" in details:  # wrong on refilled inputs, but not stale (correctness_phase.refilled_inputs)
            failed.append(f"refilled inputs: {details['refilled_miss']}")
        if timed and timed.passed is False:
            failed.append(f"timed outputs: {timed.error}")
        record.error = shorten("incorrect: " + "; ".join(failed), 600)


# What a CUDA kernel's failure says on a machine without CUDA (the build's, the runtime's and the driver's words)
NEEDS_CUDA = re.compile(
    r"CUDA_HOME|nvcc|not compiled with CUDA|no NVIDIA driver|No CUDA GPUs|CUDA driver|cuda_runtime|"
    r"CUDA is not available|Triton.*(GPU|driver|backend)|could not find CUDA",
    re.IGNORECASE,
)
CPU_HINT = (
    "this kernel needs a CUDA GPU and was evaluated on the CPU (a GPU worker evaluates it: README, 'Run it on a GPU "
    "machine'): "
)


def record_failure(record: Record, failure: CandidateFailed, *, device: str) -> None:
    """The record of a kernel that could not go on (unless whoever stopped it wrote the record already). On the
    CPU, a failure in CUDA's words says first that the kernel needs a GPU: the cause, not only the symptom."""
    if failure.status is None:
        return
    record.status = failure.status
    error = str(failure)
    if device == "cpu" and failure.status in ("compile_error", "runtime_error") and NEEDS_CUDA.search(error):
        error = CPU_HINT + error
    record.error = shorten(error)
    # A kernel that crashes or hangs at any point (timing included) is not a working kernel: never "correct".
    record.correct = False
    record.standard_correct = False


def environment(ctx: Context) -> None:
    """What the numbers were measured on and under, and the evaluation's total time. Each field is assigned, so one
    null (no CUDA on the CPU) is still written, as the dict the record once was held it (record_fields._Part)."""
    env = ctx.record.environment
    info, opts = ctx.info, ctx.opts
    env.harness_version = HARNESS_VERSION
    env.device = ctx.device
    env.device_name = info.get("device_name")
    env.arch = info.get("arch")
    env.torch = info.get("torch")
    env.cuda = info.get("cuda")
    env.cudnn = info.get("cudnn")
    env.python = info.get("python")
    env.hardware = opts.hardware or info.get("device_name")
    # The commitment to the master seed every secret seed derived from (seeds.py); the master goes to the site
    # alone (RECORD_KEY, kept server-side until it is revealed), never into a published record.
    env.seeds_digest = seeds.digest(ctx.master_seed)
    env.seeds_scheme = seeds.SCHEME
    env.kernel_sha256 = ctx.kernel_sha
    env.options = EnvOptions(
        quick=opts.quick,
        compile_baseline=opts.compile_baseline,
        randomise_params=opts.randomise_params,
        verified_trials=opts.verified_trials,
    )
    # atol = rtol of each gate for fp32 outputs; an fp16 or bf16 reference output raises it to half_precision's
    env.tolerance = Tolerances(
        verified=VERIFIED_TOLERANCE, standard=STANDARD_TOLERANCE, half_precision=dict(HALF_PRECISION_TOLERANCE)
    )
    # for the site's server-side store only (seeds.py): a transit key beside the record's fields (TRANSIT_KEYS)
    ctx.record.put(seeds.RECORD_KEY, ctx.master_seed)
    if not env.holds("precision_flags"):  # filled by integrity() from both workers; null: no kernel call ran
        env.precision_flags = None
    ctx.record.phases["total"] = round(time.monotonic() - ctx.deadline.start, 3)
