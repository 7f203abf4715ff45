"""Re-runs: a new current Evaluation for a kernel (or every kernel of a submission); the old row is kept, no longer
current, and its count on the submission is taken back. Staff ask for them (evaluation_rerun, submission_rerun), and
the site queues its own when the software under a ranked kernel changed (champions_rerun, below)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from catalogue.models import Submission
from catalogue.services import submission_reopen
from evaluator.models import Evaluation, ReEvaluation, SeedCommitment
from evaluator.selectors.eligibility import ranked_evaluations
from evaluator.selectors.stacks import current_stack, evaluation_stack
from evaluator.services.evaluations import _send as send_evaluations
from evaluator.services.evaluations import evaluations_enqueue, queue_for


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


def rerun_queue_for(hardware: str) -> str:
    """The queue of a hardware kind's re-evaluations: its workers consume it beside eval-<hardware>, after it."""
    return f"{queue_for(hardware)}-rerun"


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
        jobs = [(new.pk, new.task_id, rerun_queue_for(new.hardware))]
        transaction.on_commit(lambda: send_evaluations(jobs))
    return new
