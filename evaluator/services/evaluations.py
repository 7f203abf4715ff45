"""Writes about evaluations: enqueue, claim, finish, fail and requeue (the reaper is reaping.py, staff re-runs
reruns.py).

The Evaluation row is the truth. Every state change is a conditional UPDATE on (pk, status[, attempts]), so a
duplicate message, a redelivery or a late finish from a reaped attempt changes nothing. Submission counters move
with F() expressions in the same transaction as the evaluation they count, and only for current evaluations.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from catalogue.models import Kernel
from catalogue.services import submission_count_finished, submission_start
from evaluator import enqueue
from evaluator.hardware import device_for
from evaluator.harness.record import Record
from evaluator.host import record_with_driver
from evaluator.models import Baseline, DistributionResult, Evaluation
from evaluator.record_projection import ERROR_MAX_CHARS, distribution_rows, evaluation_columns
from evaluator.selectors.budget_admission import budget_held
from evaluator.selectors.seeds import published_commitment
from evaluator.services.baselines import baseline_add_sample, baseline_fields
from evaluator.services.budget_holds import evaluations_admit
from evaluator.services.degenerate import problem_degenerate_check
from evaluator.services.queues import evaluation_queue, rerun_ids, time_limits
from evaluator.services.seeds import seeds_commit, seeds_publish, seeds_refusal, seeds_take, seeds_used
from evaluator.services.webhooks import submission_finished_notify
from evaluator.services.work import problem_work_from_record
from evaluator.values import finite_json as finite

log = logging.getLogger(__name__)

HARDWARE_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,49}$")
RESULT_STATUSES = set(Evaluation.ResultStatus.values)


def evaluations_enqueue(*, evaluations: Iterable[Evaluation]) -> EnqueueOutcome:
    """Send one `evaluator.evaluate_kernel` message per evaluation, after the surrounding transaction commits.

    Enqueueing after commit means a worker never receives an id it cannot see yet, and a rolled-back upload never
    sends anything. The rows are the outbox: each message that reaches the broker stamps `enqueued_at`; when the
    broker is unreachable the rows stay QUEUED with `enqueued_at` None and the reaper sends them later, so the
    upload itself never fails because of the broker. Only the rows their budgets can hold are sent
    (`evaluations_admit`); the others stay QUEUED and unsent (`held`) until a finish or the reaper sends them. The
    returned outcome lists the ids not sent (after commit), and among them those held by a budget. Each
    evaluation's master seed is drawn and its digest published here, before any worker can claim it.
    """
    evaluations = list(evaluations)
    seeds_publish(evaluation_ids=[ev.pk for ev in evaluations])
    reruns = rerun_ids(ev.pk for ev in evaluations)
    jobs = [(ev.pk, ev.task_id, evaluation_queue(ev, rerun=ev.pk in reruns)) for ev in evaluations]
    outcome = EnqueueOutcome()

    def send() -> None:
        admitted = evaluations_admit(evaluation_ids=[pk for pk, _, _ in jobs])
        outcome.held.extend(pk for pk, _, _ in jobs if pk not in admitted)
        outcome.unsent.extend([*outcome.held, *_send([job for job in jobs if job[0] in admitted])])

    transaction.on_commit(send)
    return outcome


def evaluations_release(*, kernel_id: int) -> EnqueueOutcome:
    """Send what the budgets of this kernel's uploader and LLM can hold now: called when one of its evaluations
    finishes, which returns the unused part of its bound (the reaper does the same as the window moves)."""
    held = Evaluation.objects.filter(pk__in=budget_held(kernel_id=kernel_id)).order_by("pk")
    return evaluations_enqueue(evaluations=list(held))


@dataclass(slots=True)
class EnqueueOutcome:
    """Filled when the enqueueing transaction commits: the evaluation ids whose message did not reach the broker,
    and those of them held back by a compute budget (never sent)."""

    unsent: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)


def _send(jobs: list[tuple[int, str, str]]) -> list[int]:
    """Publish evaluate_kernel messages; stamp the rows that reached the broker; return the ids that did not."""
    evaluate_kernel_task = enqueue.task(enqueue.EVALUATE_KERNEL)
    limits = time_limits()
    sent: list[int] = []
    unsent: list[int] = []
    for pk, task_id, queue in jobs:
        if unsent:  # the broker is down: do not wait for its connection retries once per message
            unsent.append(pk)
            continue
        try:
            evaluate_kernel_task.apply_async(
                args=[pk], task_id=task_id or None, queue=queue, soft_time_limit=limits.soft, time_limit=limits.hard
            )
        except Exception as exc:  # kombu.OperationalError, socket errors...: the reaper re-sends the row later
            log.warning("evaluation %s: broker unreachable, left for the reaper to send (%s)", pk, exc)
            unsent.append(pk)
        else:
            sent.append(pk)
    if sent:
        Evaluation.objects.filter(pk__in=sent, status=Evaluation.Status.QUEUED).update(enqueued_at=timezone.now())
    if unsent:  # admitted but not sent: they hold no bound until the reaper sends them
        Evaluation.objects.filter(pk__in=unsent, status=Evaluation.Status.QUEUED).update(enqueued_at=None)
    return unsent


def kernels_audit_enqueue(*, kernel_ids: list[int]) -> None:
    """Run the static audit of freshly uploaded kernels on the default queue, after the upload commits."""
    audit_kernels_static = enqueue.task(enqueue.AUDIT_KERNELS_STATIC)

    def send() -> None:
        try:
            audit_kernels_static.apply_async(args=[kernel_ids])
        except Exception as exc:  # the broker is down: the reaper re-sends it with the kernels' evaluations
            log.warning("static audit of kernels %s not sent: broker unreachable (%s)", kernel_ids, exc)

    if kernel_ids:
        transaction.on_commit(send)


# --- Claim and run ----------------------------------------------------------------------------------------------


def evaluation_claim(*, evaluation_id: int, worker: str = "") -> Evaluation | None:
    """Compare-and-set QUEUED -> RUNNING. Returns the claimed row, or None when another delivery got it first."""
    with transaction.atomic():
        claimed = Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.Status.QUEUED, is_current=True).update(
            status=Evaluation.Status.RUNNING,
            started_at=timezone.now(),
            heartbeat_at=timezone.now(),
            finished_at=None,
            attempts=F("attempts") + 1,
            worker=worker[:255],
        )
        if claimed != 1:
            return None
        evaluation = Evaluation.objects.select_related("kernel__problem").get(pk=evaluation_id)
        submission_start(submission_id=evaluation.kernel.submission_id)
    return evaluation


def evaluation_heartbeat(*, evaluation: Evaluation) -> bool:
    """Record that this attempt is still running (False once it no longer owns the row: reaped or finished)."""
    return (
        Evaluation.objects.filter(
            pk=evaluation.pk, status=Evaluation.Status.RUNNING, attempts=evaluation.attempts
        ).update(heartbeat_at=timezone.now())
        == 1
    )


def harness_arguments(evaluation: Evaluation) -> dict[str, Any]:
    """Keyword arguments for `evaluator.runner.run_evaluation` (the harness contract) for one claimed evaluation."""
    device = device_for(evaluation.hardware)
    published = published_commitment(evaluation_id=evaluation.pk)
    # The master seed whose digest was published when the evaluation was queued (none for older rows: the harness
    # draws one). It travels from the database to the harness's spec, never through the broker.
    seeds = {"seeds": published.master} if published is not None else {}
    return {
        "problem_source": evaluation.kernel.problem.source,
        "kernel_source": evaluation.kernel.source,
        "device": device,
        "timeout": time_limits().harness,
        "work_root": settings.EVALUATOR_WORK_DIR,
        "compile_cache_dir": settings.EVALUATOR_COMPILE_CACHE_DIR,
        "python": settings.EVALUATOR_PYTHON or None,
        "prestart": settings.EVALUATOR_PRESTART,
        "require_sandbox": settings.EVALUATOR_REQUIRE_SANDBOX,
        # CPU runs are demos and tests: small trial counts. GPU runs use the full protocol. A re-run (an earlier
        # evaluation of this kernel on this hardware exists: staff re-runs, the site's own) builds from source: the
        # compile cache holds what the earlier run's kernel left there, not independent evidence.
        "options": {"quick": device == "cpu", "hardware": evaluation.hardware}
        | ({} if device == "cpu" else {"gpu_lock_dir": str(settings.EVALUATOR_GPU_LOCK_DIR)})
        | ({"build_from_source": True} if _is_rerun(evaluation) else {})
        | seeds,
    }


def _is_rerun(evaluation: Evaluation) -> bool:
    earlier = Evaluation.objects.filter(kernel_id=evaluation.kernel_id, hardware=evaluation.hardware)
    return earlier.filter(pk__lt=evaluation.pk).exists()


def timeout_record(*, seconds: int) -> Record:
    """The result record for an evaluation stopped by Celery's soft time limit (the harness should stop first)."""
    return Record(
        status=Evaluation.ResultStatus.TIMEOUT.value,
        correct=False,
        standard_correct=False,
        error=f"evaluation exceeded the worker's soft time limit ({seconds} s)",
    )


def evaluation_record(*, evaluation: Evaluation, record: dict[str, Any] | Record) -> Record | None:
    """What the harness returned for `evaluation`, typed: validated once here (NaN and Inf read as null), for
    evaluation_finish. None when it is not a record of the contract (evaluator/harness/record.py): the evaluation
    is then failed, as an infrastructure error with the reason."""
    if isinstance(record, Record):
        return record
    try:
        return Record.from_dict(finite(record))
    except ValueError as exc:
        evaluation_fail(evaluation=evaluation, error=f"the harness returned a malformed result record: {exc}")
        return None


# --- Finish -----------------------------------------------------------------------------------------------------


def _count_finished(evaluation: Evaluation, *, correct: bool) -> None:
    """Count a newly finished evaluation on its submission, if it is still the current one, and close the
    submission when every kernel has a finished current evaluation. Call inside the finishing transaction."""
    if not Evaluation.objects.filter(pk=evaluation.pk, is_current=True).exists():
        return  # superseded by a re-run while it ran: the new row will be counted instead
    submission_id = Kernel.objects.filter(pk=evaluation.kernel_id).values_list("submission_id", flat=True).get()
    any_done = Evaluation.objects.filter(
        kernel__submission_id=submission_id, is_current=True, status=Evaluation.Status.DONE
    ).exists()
    submission_count_finished(submission_id=submission_id, correct=correct, any_done=any_done)
    submission_finished_notify(submission_id=submission_id)  # its uploader's webhook, once the submission closes


def evaluation_finish(*, evaluation: Evaluation, record: Record) -> bool:
    """Store a harness result record (typed by evaluation_record, or built by the site): Evaluation columns,
    DistributionResult rows, the Baselines' aggregates, the submission's counters, and (when the reference output
    was constant) the problem's degenerate status. A record whose seeds do not match what was published fails the
    evaluation instead. Returns False (and stores nothing) if this attempt no longer owns the row."""
    master = seeds_take(record)  # the master seed is kept apart, never in the stored record
    record_with_driver(record, device=device_for(evaluation.hardware))  # this worker's NVIDIA driver, for the stack
    if record.status not in RESULT_STATUSES:
        return evaluation_fail(evaluation=evaluation, error="the harness returned a malformed result record")
    published = published_commitment(evaluation_id=evaluation.pk)
    if published is not None:  # the digest published before the run is the one the record must commit to
        if refusal := seeds_refusal(published=published, master=master, record=record):
            log.error("evaluation %s: %s", evaluation.pk, refusal)
            return evaluation_fail(evaluation=evaluation, error=refusal)
    elif seeds_used(master):
        return evaluation_fail(evaluation=evaluation, error="the harness reused a master seed of another evaluation")
    columns = evaluation_columns(record)
    with transaction.atomic():
        updated = Evaluation.objects.filter(
            pk=evaluation.pk, status=Evaluation.Status.RUNNING, attempts=evaluation.attempts
        ).update(
            status=Evaluation.Status.DONE,
            finished_at=timezone.now(),
            **columns,
            harness_seconds=harness_seconds(evaluation=evaluation, phases=record.phases),
        )
        if updated != 1:
            log.warning("evaluation %s: result of a stale attempt ignored", evaluation.pk)
            return False
        _store_distributions(evaluation, record)
        _store_baselines(evaluation, record)
        _count_finished(evaluation, correct=columns["correct"])
        if published is None:  # an older row: its digest is published with the verdict
            seeds_commit(evaluation=evaluation, master=master, record=record)
    if record.reference_constant:
        problem_degenerate_check(problem_id=evaluation.kernel.problem_id)
    problem_work_from_record(problem_id=evaluation.kernel.problem_id, speed_of_light=record.speed_of_light)
    evaluations_release(kernel_id=evaluation.kernel_id)  # its unused bound is back: held kernels may go
    return True


def harness_seconds(*, evaluation: Evaluation, phases: dict[str, Any] | None = None) -> float:
    """What one attempt cost, for the compute budget (evaluator.selectors.budget): the harness's own total less
    its wait for the GPU lock when the record has it, else the sum of its phases, never more than the attempt's
    wall time since the claim (and that wall time when the record has no phases: a timeout, a lost harness)."""
    started = evaluation.started_at
    wall = max(0.0, (timezone.now() - started).total_seconds()) if started else None
    phases = phases or {}
    numbers = {k: v for k, v in phases.items() if isinstance(v, int | float) and v == v and v >= 0}
    waited = float(numbers.get("gpu_wait", 0.0))
    if "total" in numbers:
        used = float(numbers["total"]) - waited
    else:
        used = sum(float(v) for k, v in numbers.items() if k != "gpu_wait")
    if wall is not None and (used <= 0 or used > wall):
        used = wall if used <= 0 else min(used, wall)
    return round(max(0.0, used), 3)


def _store_distributions(evaluation: Evaluation, result: Record) -> None:
    rows = [DistributionResult(evaluation=evaluation, **fields) for fields in distribution_rows(result)]
    DistributionResult.objects.filter(evaluation=evaluation).delete()  # a re-claimed attempt starts clean
    DistributionResult.objects.bulk_create(rows, ignore_conflicts=True)


BASELINE_KEYS = {
    Baseline.Precision.TF32: "baseline_tf32",
    Baseline.Precision.FP32: "baseline_fp32",
    Baseline.Precision.COMPILE: "baseline_compile",
}


def _store_baselines(evaluation: Evaluation, result: Record) -> None:
    """Add the paired reference measurements to the stored Baselines of this problem and hardware: each is the
    median over every evaluation's measurement (evaluator.services.baselines), so one noisy run cannot fix it."""
    torch_version = str(result.environment.torch or "unknown")[:64]
    timing = result.timing.to_dict()
    for precision, key in BASELINE_KEYS.items():
        peak = result.memory.baseline_peak_bytes if precision == Baseline.Precision.TF32 else None
        extra = {
            "method": result.timing.method,
            "device_kind": result.timing.device_kind,
            "evaluation_id": evaluation.pk,
        }
        fields = baseline_fields(timing.get(key), peak=peak, extra=extra)
        if fields is None:
            continue
        baseline_add_sample(
            key=str(evaluation.pk),
            fields=fields,
            problem_id=evaluation.kernel.problem_id,
            hardware=evaluation.hardware,
            torch_version=torch_version,
            precision=precision,
        )


# --- Failures, retries and the reaper ---------------------------------------------------------------------------


def evaluation_fail(*, evaluation: Evaluation, error: str) -> bool:
    """Give up on an evaluation (infrastructure, not the kernel's fault): FAILED, no verdict, counted as finished."""
    with transaction.atomic():
        updated = Evaluation.objects.filter(
            pk=evaluation.pk, status=Evaluation.Status.RUNNING, attempts=evaluation.attempts
        ).update(
            status=Evaluation.Status.FAILED,
            finished_at=timezone.now(),
            error=error[:ERROR_MAX_CHARS],
            harness_seconds=harness_seconds(evaluation=evaluation),  # the worker's time is spent all the same
        )
        if updated != 1:
            return False
        _count_finished(evaluation, correct=False)
    return True


def evaluation_retry_or_fail(*, evaluation: Evaluation, error: str) -> bool:
    """After an infrastructure fault: put the row back in the queue if attempts are left (True: the caller sends
    the retry message), else mark it FAILED (False)."""
    if evaluation.attempts >= settings.EVALUATOR_MAX_ATTEMPTS:
        evaluation_fail(evaluation=evaluation, error=f"gave up after {evaluation.attempts} attempts: {error}")
        return False
    updated = Evaluation.objects.filter(
        pk=evaluation.pk, status=Evaluation.Status.RUNNING, attempts=evaluation.attempts
    ).update(status=Evaluation.Status.QUEUED, started_at=None, worker="", error=error[:ERROR_MAX_CHARS])
    return updated == 1
