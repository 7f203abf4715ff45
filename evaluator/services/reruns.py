"""Re-runs: a new current Evaluation for a kernel (or every kernel of a submission); the old row is kept, no longer
current, and its count on the submission is taken back. Staff ask for them (evaluation_rerun, submission_rerun), and
the site queues its own when the software under a ranked kernel changed (champions_rerun, below)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from catalogue.models import Submission
from catalogue.services import submission_reopen
from evaluator import enqueue
from evaluator.models import Evaluation, ReEvaluation, SeedCommitment
from evaluator.selectors.eligibility import ranked_evaluations
from evaluator.selectors.stacks import current_stack, evaluation_stack
from evaluator.services.evaluations import evaluations_enqueue
from evaluator.services.queues import rerun_queue_for, time_limits

log = logging.getLogger(__name__)


def _supersede(old: Evaluation) -> None:
    """Take `old` out of the current set (inside a transaction, row locked) and undo its count if it was counted.
    Its master seed, if it has one, is revealed now: a superseded verdict can be re-run by anyone."""
    Evaluation.objects.filter(pk=old.pk).update(is_current=False)
    SeedCommitment.objects.filter(evaluation_id=old.pk, revealed_at__isnull=True).update(revealed_at=timezone.now())
    if old.status == Evaluation.Status.QUEUED:
        # Its message may still be waiting; the claim only takes current rows, and this closes the row for good.
        Evaluation.objects.filter(pk=old.pk).update(
            status=Evaluation.Status.FAILED, finished_at=timezone.now(), error="superseded by a re-run"
        )
    submission_reopen(
        submission_id=old.kernel.submission_id,
        uncount=old.is_current and old.is_finished,
        correct=old.status == Evaluation.Status.DONE and bool(old.correct),
    )


def _rerun_locked(old: Evaluation) -> Evaluation:
    _supersede(old)
    new = Evaluation.objects.create(
        kernel_id=old.kernel_id, hardware=old.hardware, status=Evaluation.Status.QUEUED, task_id=str(uuid.uuid4())
    )
    evaluations_enqueue(evaluations=[new])
    return new


def evaluation_rerun(*, evaluation_id: int) -> Evaluation:
    """Staff re-run: a new current Evaluation for the same kernel and hardware; the old row is kept, not current.

    Re-running a historical (non-current) row re-runs whatever is current for that kernel and hardware now.
    """
    with transaction.atomic():
        target = Evaluation.objects.get(pk=evaluation_id)
        current = (
            Evaluation.objects.select_for_update()
            .select_related("kernel")
            .filter(kernel_id=target.kernel_id, hardware=target.hardware, is_current=True)
            .first()
        )
        if current is not None:
            return _rerun_locked(current)
        new = Evaluation.objects.create(kernel_id=target.kernel_id, hardware=target.hardware, task_id=str(uuid.uuid4()))
        evaluations_enqueue(evaluations=[new])
        return new


def submission_rerun(*, submission_id: int) -> list[Evaluation]:
    """Staff re-run of every kernel of a submission on its hardware."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        olds = list(
            Evaluation.objects.select_for_update()
            .select_related("kernel")
            .filter(kernel__submission=submission, hardware=submission.hardware, is_current=True)
        )
        news = [_rerun_locked(old) for old in olds]
    return news


# --- Verdicts that follow the software --------------------------------------------------------------------------
#
# When the workers of a hardware kind run a stack (torch, CUDA, driver, GPU) other than the one a ranked kernel was
# measured on, the best kernel per problem and LLM is evaluated again, on a queue of its own below uploads
# (`eval-<hardware>-rerun`), within RERUN_GPU_SECONDS_PER_DAY of estimated harness time per rolling 24 hours.
# The most visible champions (fastest first) go first; each kernel at most once per stack (ReEvaluation's unique
# constraint), so a fleet with two stacks cannot queue the same kernel back and forth.


def _estimated_seconds(evaluation: Evaluation) -> float:
    """What evaluating the kernel again will cost: its last run's harness time, else a default."""
    if evaluation.harness_seconds:
        return float(evaluation.harness_seconds)
    total = ((evaluation.result or {}).get("phases") or {}).get("total")
    if isinstance(total, int | float) and total > 0:
        return float(total)
    return float(getattr(settings, "RERUN_DEFAULT_SECONDS", 120))


def rerun_budget_left(*, hardware: str, now: datetime | None = None) -> float:
    """Seconds of RERUN_GPU_SECONDS_PER_DAY not yet given to re-evaluations of `hardware` in the last 24 hours."""
    since = (now or timezone.now()) - timedelta(days=1)
    spent = ReEvaluation.objects.filter(hardware=hardware, created_at__gte=since).aggregate(
        total=Sum("estimated_seconds")
    )["total"]
    return float(getattr(settings, "RERUN_GPU_SECONDS_PER_DAY", 3600)) - float(spent or 0.0)


def champions(*, hardware: str) -> list[Evaluation]:
    """The ranked evaluation of the fastest eligible kernel per problem and LLM on `hardware`, fastest first."""
    best: dict[tuple[int, int], Evaluation] = {}
    rows = ranked_evaluations(hardware=hardware).select_related("kernel").order_by("-speedup", "pk")
    for ev in rows:
        best.setdefault((ev.kernel.problem_id, ev.kernel.llm_id), ev)
    return list(best.values())


@dataclass(slots=True)
class RerunPlan:
    """What one pass of `champions_rerun` did for one hardware kind."""

    hardware: str
    stack: str
    queued: list[int] = field(default_factory=list)  # new evaluation ids
    over_budget: list[int] = field(default_factory=list)  # kernel ids left for a later pass


def champions_rerun(*, hardware: str | None = None) -> list[RerunPlan]:
    """Queue re-evaluations of champions measured on another stack than their hardware's workers run now."""
    kinds = [hardware] if hardware else sorted(set(ranked_evaluations().values_list("hardware", flat=True)))
    return [_rerun_hardware(kind) for kind in kinds]


def _rerun_hardware(hardware: str) -> RerunPlan:
    plan = RerunPlan(hardware=hardware, stack=current_stack(hardware=hardware))
    if not plan.stack:
        return plan
    left = rerun_budget_left(hardware=hardware)
    # A champion being evaluated again keeps its place: its runner-up is not re-run meanwhile.
    pending = set(
        ReEvaluation.objects.filter(
            hardware=hardware, evaluation__status__in=[Evaluation.Status.QUEUED, Evaluation.Status.RUNNING]
        ).values_list("kernel__problem_id", "kernel__llm_id")
    )
    for champion in champions(hardware=hardware):
        if (champion.kernel.problem_id, champion.kernel.llm_id) in pending:
            continue
        was = evaluation_stack(champion)
        if was == plan.stack or not was:  # measured on today's stack, or a record too old to say
            continue
        if ReEvaluation.objects.filter(kernel_id=champion.kernel_id, hardware=hardware, stack=plan.stack).exists():
            continue
        cost = _estimated_seconds(champion)
        if cost > left:
            plan.over_budget.append(champion.kernel_id)
            continue
        new = _rerun_for_stack(champion, stack=plan.stack, previous_stack=was, cost=cost)
        if new is not None:
            left -= cost
            plan.queued.append(new.pk)
    return plan


def _rerun_for_stack(champion: Evaluation, *, stack: str, previous_stack: str, cost: float) -> Evaluation | None:
    with transaction.atomic():
        old = (
            Evaluation.objects.select_for_update()
            .select_related("kernel")
            .filter(pk=champion.pk, is_current=True, status=Evaluation.Status.DONE)
            .first()
        )
        if old is None:  # re-run or superseded meanwhile
            return None
        _supersede(old)
        new = Evaluation.objects.create(
            kernel_id=old.kernel_id, hardware=old.hardware, status=Evaluation.Status.QUEUED, task_id=str(uuid.uuid4())
        )
        ReEvaluation.objects.create(
            evaluation=new,
            previous=old,
            kernel_id=old.kernel_id,
            hardware=old.hardware,
            stack=stack,
            previous_stack=previous_stack,
            estimated_seconds=cost,
        )
        evaluations_enqueue(evaluations=[new])  # to rerun_queue_for(hardware): it has its ReEvaluation now
    return new


# --- Below uploads ----------------------------------------------------------------------------------------------
#
# A worker consumes eval-<hardware> and eval-<hardware>-rerun; which of two waiting messages a broker hands over
# first is its own business (round robin on most transports). So a re-evaluation's task first asks the database:
# while an upload of its hardware waits, it sends itself again to its own queue, RERUN_DEFER_SECONDS later, and the
# worker takes the upload. Uploads never wait behind the site's own re-runs, whatever the broker.


def rerun_should_wait(*, evaluation_id: int) -> bool:
    """True when `evaluation_id` is a queued re-evaluation and an upload of its hardware is waiting (queued, sent)."""
    hardware = (
        Evaluation.objects.filter(
            pk=evaluation_id, status=Evaluation.Status.QUEUED, is_current=True, re_evaluation__isnull=False
        )
        .values_list("hardware", flat=True)
        .first()
    )
    if hardware is None:
        return False
    return Evaluation.objects.filter(
        hardware=hardware,
        status=Evaluation.Status.QUEUED,
        is_current=True,
        enqueued_at__isnull=False,
        re_evaluation__isnull=True,
    ).exists()


def rerun_defer(*, evaluation_id: int) -> bool:
    """Send the re-evaluation's message again, to its own queue, RERUN_DEFER_SECONDS from now (its sent time moves
    with it, so the reaper does not count it lost). False when it could not be sent (the caller runs it now)."""
    task = enqueue.task(enqueue.EVALUATE_KERNEL)
    if task.app.conf.task_always_eager:  # in-process tasks (tests, eager mode): waiting would recurse
        return False
    evaluation = Evaluation.objects.filter(pk=evaluation_id).only("pk", "hardware", "task_id").first()
    if evaluation is None:
        return False
    limits = time_limits()
    try:
        task.apply_async(
            args=[evaluation.pk],
            task_id=evaluation.task_id or None,
            queue=rerun_queue_for(evaluation.hardware),
            countdown=float(getattr(settings, "RERUN_DEFER_SECONDS", 30)),
            soft_time_limit=limits.soft,
            time_limit=limits.hard,
        )
    except Exception as exc:  # the broker went away: run it now rather than lose it
        log.warning("re-evaluation %s not deferred: %s", evaluation_id, exc)
        return False
    Evaluation.objects.filter(pk=evaluation.pk, status=Evaluation.Status.QUEUED).update(enqueued_at=timezone.now())
    return True
