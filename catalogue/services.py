"""Writes to a submission's progress, offered to the evaluator (which must not write catalogue rows itself).

Each is one conditional UPDATE, so callers run them inside their own transaction and concurrent workers never
lose a count."""

from __future__ import annotations

from django.db.models import F

from catalogue.models import Problem, Submission


def submission_start(*, submission_id: int) -> None:
    """The first evaluation of a received submission was claimed: it is running now."""
    Submission.objects.filter(pk=submission_id, status=Submission.Status.RECEIVED).update(
        status=Submission.Status.RUNNING
    )


def submission_count_finished(*, submission_id: int, correct: bool, any_done: bool) -> None:
    """Count one newly finished kernel evaluation, and close the submission once every kernel is counted: DONE
    when at least one evaluation finished (`any_done`, the caller's to know), FAILED otherwise."""
    Submission.objects.filter(pk=submission_id).update(
        evaluated_count=F("evaluated_count") + 1, correct_count=F("correct_count") + int(correct)
    )
    complete = Submission.objects.filter(pk=submission_id, evaluated_count=F("kernel_count"))
    complete.update(status=Submission.Status.DONE if any_done else Submission.Status.FAILED)


def submission_reopen(*, submission_id: int, uncount: bool = False, correct: bool = False) -> None:
    """A kernel is evaluated again (a staff re-run): take back its earlier count if it had one (`uncount`, and
    `correct` when that count was a correct one) and mark the submission running."""
    if uncount:
        Submission.objects.filter(pk=submission_id).update(
            evaluated_count=F("evaluated_count") - 1, correct_count=F("correct_count") - int(correct)
        )
    Submission.objects.filter(pk=submission_id).exclude(status=Submission.Status.RUNNING).update(
        status=Submission.Status.RUNNING
    )


def problem_set_work(*, problem_id: int, flops: int | None, bytes_moved: int | None, counts: dict, force: bool = False):
    """Store the work one forward of a problem must do (counted by the evaluator's harness). Without
    `force`, only a problem not counted yet is written (the first evaluation's record fills it)."""
    rows = Problem.objects.filter(pk=problem_id)
    if not force:
        rows = rows.filter(bytes_moved__isnull=True)
    return rows.update(flops=flops, bytes_moved=bytes_moved, work_counts=counts)
