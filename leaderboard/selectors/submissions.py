"""Reads about submissions: progress (done/total, queue position, per-kernel state) and result rows for CSV."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Min, Q, QuerySet

from catalogue.models import Submission
from evaluator.models import Evaluation
from evaluator.selectors.eligibility import ranked_evaluations
from evaluator.verdict_label import VerdictLabel
from leaderboard.untrusted import spreadsheet_cell


def submission_list(*, llm_id: int | None = None, status: str | None = None) -> QuerySet[Submission]:
    qs = Submission.objects.select_related("llm", "uploader")
    if llm_id:
        qs = qs.filter(llm_id=llm_id)
    if status:
        qs = qs.filter(status=status)
    return qs


def current_evaluations(submission: Submission) -> QuerySet[Evaluation]:
    """The current evaluation of every kernel of the submission on its hardware, in problem order."""
    return (
        Evaluation.objects.filter(kernel__submission=submission, hardware=submission.hardware, is_current=True)
        .select_related("kernel__problem")
        .order_by("kernel__problem__level", "kernel__problem__problem_id", "kernel__sample")
    )


def queue_position(*, hardware: str, before_pk: int) -> int:
    """Queued evaluations ahead of `before_pk` on the same queue (one queue per hardware label, FIFO by id)."""
    return Evaluation.objects.filter(
        status=Evaluation.Status.QUEUED, hardware=hardware, is_current=True, pk__lt=before_pk
    ).count()


@dataclass(frozen=True, slots=True)
class KernelProgress:
    """One kernel of a running submission: its current evaluation's state and verdict."""

    kernel_id: int
    evaluation_id: int
    level: int
    problem_id: int
    problem_name: str
    sample: int
    status: str
    result_status: str
    correct: bool | None
    speedup: float | None
    attempts: int
    error: str
    verdict: VerdictLabel


@dataclass(slots=True)
class SubmissionProgress:
    """Everything the progress widget and `GET /api/submissions/<id>/` show about a running submission."""

    status: str
    total: int
    done: int
    correct: int
    queued: int
    running: int
    failed: int
    queue_position: int | None
    kernels: list[KernelProgress] = field(default_factory=list)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100

    @property
    def finished(self) -> bool:
        return self.status in {Submission.Status.DONE, Submission.Status.FAILED}


def submission_progress(*, submission: Submission, with_kernels: bool = True) -> SubmissionProgress:
    """Counts by state, the queue position of the submission's first queued evaluation, and per-kernel rows."""
    evaluations = current_evaluations(submission)
    counts = evaluations.aggregate(
        queued=Count("pk", filter=Q(status=Evaluation.Status.QUEUED)),
        running=Count("pk", filter=Q(status=Evaluation.Status.RUNNING)),
        failed=Count("pk", filter=Q(status=Evaluation.Status.FAILED)),
        first_queued=Min("pk", filter=Q(status=Evaluation.Status.QUEUED)),
    )
    position = None
    if counts["first_queued"] is not None:
        position = queue_position(hardware=submission.hardware, before_pk=counts["first_queued"])
    kernels = []
    if with_kernels:
        for ev in evaluations:
            kernels.append(
                KernelProgress(
                    kernel_id=ev.kernel_id,
                    evaluation_id=ev.pk,
                    level=ev.kernel.problem.level,
                    problem_id=ev.kernel.problem.problem_id,
                    problem_name=ev.kernel.problem.name,
                    sample=ev.kernel.sample,
                    status=ev.status,
                    result_status=ev.result_status,
                    correct=ev.correct,
                    speedup=ev.speedup,
                    attempts=ev.attempts,
                    error=ev.error[:300],
                    verdict=ev.verdict_label(),
                )
            )
    return SubmissionProgress(
        status=submission.status,
        total=submission.kernel_count,
        done=submission.evaluated_count,
        correct=submission.correct_count,
        queued=counts["queued"],
        running=counts["running"],
        failed=counts["failed"],
        queue_position=position,
        kernels=kernels,
    )


CSV_COLUMNS = [
    "submission_id",
    "llm",
    "hardware",
    "problem_set",
    "level",
    "problem_id",
    "problem_name",
    "problem_sha256",
    "problem_active",
    "sample",
    "kernel_id",
    "kernel_sha256",
    "evaluation_id",
    "status",
    "result_status",
    "correct",
    "standard_correct",
    "reference_constant",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "speedup_fp32",
    "memory_ratio",
    "candidate_ms",
    "eligible",
    "attempts",
    "error",
]


def submission_result_rows(*, submission: Submission) -> list[dict[str, Any]]:
    """One row per kernel (its current evaluation), with eligibility from the single rule in eligibility.py."""
    eligible = set(ranked_evaluations().filter(kernel__submission=submission).values_list("pk", flat=True))
    rows = []
    for ev in current_evaluations(submission):
        problem = ev.kernel.problem
        rows.append(
            {
                "submission_id": submission.pk,
                "llm": submission.llm.name,
                "hardware": ev.hardware,
                "problem_set": problem.problem_set,
                "level": problem.level,
                "problem_id": problem.problem_id,
                "problem_name": problem.name,
                "problem_sha256": problem.sha256,
                "problem_active": problem.active,
                "sample": ev.kernel.sample,
                "kernel_id": ev.kernel_id,
                "kernel_sha256": ev.kernel.sha256,
                "evaluation_id": ev.pk,
                "status": ev.status,
                "result_status": ev.result_status,
                "correct": ev.correct,
                "standard_correct": ev.standard_correct,
                "reference_constant": ev.reference_constant,
                "speedup": ev.speedup,
                "speedup_ci_low": ev.speedup_ci_low,
                "speedup_ci_high": ev.speedup_ci_high,
                "speedup_fp32": ev.speedup_fp32,
                "memory_ratio": ev.memory_ratio,
                "candidate_ms": ev.candidate_ms,
                "eligible": ev.pk in eligible,
                "attempts": ev.attempts,
                "error": ev.error,
            }
        )
    return rows


def submission_results_csv(*, submission: Submission) -> str:
    """The submission's results as CSV text (header row, then one row per kernel)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in submission_result_rows(submission=submission):
        writer.writerow({key: spreadsheet_cell(value) for key, value in row.items()})
    return buffer.getvalue()
