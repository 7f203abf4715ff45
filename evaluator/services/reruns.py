"""Staff re-runs: a new current Evaluation for a kernel (or every kernel of a submission); the old row is kept,
no longer current, and its count on the submission is taken back."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from catalogue.models import Submission
from catalogue.services import submission_reopen
from evaluator.models import Evaluation
from evaluator.services.evaluations import evaluations_enqueue


def _supersede(old: Evaluation) -> None:
    """Take `old` out of the current set (inside a transaction, row locked) and undo its count if it was counted."""
    Evaluation.objects.filter(pk=old.pk).update(is_current=False)
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
