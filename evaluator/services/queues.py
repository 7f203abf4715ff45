"""Where an evaluation's message goes and how long it may run: each hardware kind's uploads queue and re-run queue,
and the nested time limits of the harness, Celery's soft limit and its hard limit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from evaluator.models import Evaluation, ReEvaluation


def queue_for(hardware: str) -> str:
    """Each hardware label has its own queue, so a GPU worker only takes work meant for its GPU."""
    return f"eval-{hardware}"


def rerun_queue_for(hardware: str) -> str:
    """The queue of a hardware kind's re-evaluations (evaluator.services.reruns): its workers consume it beside
    eval-<hardware>, and a re-evaluation yields to waiting uploads (rerun_should_wait)."""
    return f"{queue_for(hardware)}-rerun"


def queues_for(hardware: str) -> list[str]:
    """Every queue a worker of `hardware` consumes, uploads first."""
    return [queue_for(hardware), rerun_queue_for(hardware)]


def rerun_ids(evaluation_ids: Iterable[int]) -> set[int]:
    """Which of these evaluations the site queued itself for a new stack (a ReEvaluation): they live on the re-run
    queue, whoever sends them (the queueing, a retry, the reaper)."""
    return set(
        ReEvaluation.objects.filter(evaluation_id__in=list(evaluation_ids)).values_list("evaluation_id", flat=True)
    )


def evaluation_queue(evaluation: Evaluation, *, rerun: bool | None = None) -> str:
    """The queue `evaluation` belongs on: its hardware's re-run queue for a re-evaluation, else its uploads queue."""
    if rerun is None:
        rerun = bool(rerun_ids([evaluation.pk]))
    return rerun_queue_for(evaluation.hardware) if rerun else queue_for(evaluation.hardware)


@dataclass(frozen=True, slots=True)
class TimeLimits:
    """Nested limits: the harness kills its own subprocess first, Celery's soft limit next, the hard limit last."""

    harness: float
    soft: int
    hard: int


def time_limits() -> TimeLimits:
    harness = float(settings.EVALUATOR_HARNESS_TIMEOUT)
    soft = int(harness) + int(getattr(settings, "EVALUATOR_SOFT_LIMIT_MARGIN", 60))
    hard = soft + int(getattr(settings, "EVALUATOR_HARD_LIMIT_MARGIN", 30))
    return TimeLimits(harness=harness, soft=soft, hard=hard)


def retry_countdown(attempts: int) -> int:
    """Exponential backoff for infrastructure faults: base, 2*base, 4*base... capped at ten minutes."""
    base = int(getattr(settings, "EVALUATOR_RETRY_BACKOFF", 10))
    return min(600, base * 2 ** max(0, attempts - 1))
