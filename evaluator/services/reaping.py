"""The reaper: recover evaluations whose worker or message was lost (celery beat, or `manage.py reap_evaluations`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluator.models import Evaluation
from evaluator.services.evaluations import evaluation_fail, evaluations_enqueue, kernels_audit_enqueue, time_limits


@dataclass(frozen=True, slots=True)
class ReapResult:
    requeued: list[int]
    failed: list[int]
    resent: list[int] = field(default_factory=list)  # QUEUED rows whose message was re-sent
    orphans: list[str] = field(default_factory=list)  # work folders of dead workers' harnesses, removed


def _seconds(name: str, default: float) -> timedelta:
    return timedelta(seconds=float(getattr(settings, name, default)))


def evaluations_reap(
    *,
    stale_after: timedelta | None = None,
    heartbeat_stale: timedelta | None = None,
    enqueue_stale: timedelta | None = None,
    queued_stale: timedelta | None = None,
) -> ReapResult:
    """Recover every evaluation whose message or worker was lost; safe to run at any time, from anywhere.

    - RUNNING rows whose heartbeat is older than EVALUATOR_HEARTBEAT_STALE (their worker died: kill -9, machine
      lost), or that started longer ago than the hard time limit + 60 s (`stale_after`), are requeued, or FAILED
      once they have used EVALUATOR_MAX_ATTEMPTS;
    - QUEUED rows whose message never reached the broker (`enqueued_at` None for EVALUATOR_ENQUEUE_STALE: the
      broker was down at upload) are sent, with their kernel's static audit; QUEUED rows sent longer ago than
      EVALUATOR_QUEUED_STALE are sent again (a broker that lost its messages). A duplicate message is harmless:
      the claim is a compare-and-set, so an evaluation still runs and is counted once;
    - harness processes and work folders left on this machine by dead workers are removed.
    """
    now = timezone.now()
    if stale_after is None:  # (not `or`: a zero timedelta is falsy and means "everything running")
        stale_after = timedelta(seconds=time_limits().hard + 60)
    if heartbeat_stale is None:
        heartbeat_stale = _seconds("EVALUATOR_HEARTBEAT_STALE", 60)
    lost = Evaluation.objects.filter(status=Evaluation.Status.RUNNING).filter(
        Q(started_at__lt=now - stale_after) | Q(heartbeat_at__lt=now - heartbeat_stale)
    )
    requeued: list[int] = []
    failed: list[int] = []
    for evaluation in lost.select_related("kernel"):
        if evaluation.attempts >= settings.EVALUATOR_MAX_ATTEMPTS:
            if evaluation_fail(evaluation=evaluation, error=f"worker lost {evaluation.attempts} times; gave up"):
                failed.append(evaluation.pk)
            continue
        with transaction.atomic():
            task_id = str(uuid.uuid4())
            updated = Evaluation.objects.filter(
                pk=evaluation.pk, status=Evaluation.Status.RUNNING, attempts=evaluation.attempts
            ).update(
                status=Evaluation.Status.QUEUED,
                started_at=None,
                heartbeat_at=None,
                enqueued_at=None,
                worker="",
                task_id=task_id,
                error=f"requeued by the reaper after attempt {evaluation.attempts} (worker lost)",
            )
            if updated == 1:
                evaluation.task_id = task_id
                evaluations_enqueue(evaluations=[evaluation])
                requeued.append(evaluation.pk)
    resent = _resend_queued(
        now=now,
        enqueue_stale=enqueue_stale if enqueue_stale is not None else _seconds("EVALUATOR_ENQUEUE_STALE", 60),
        queued_stale=queued_stale if queued_stale is not None else _seconds("EVALUATOR_QUEUED_STALE", 1800),
        skip=set(requeued),
    )
    from evaluator.orphans import orphans_remove

    orphans = orphans_remove(Path(settings.EVALUATOR_WORK_DIR))
    return ReapResult(requeued=requeued, failed=failed, resent=resent, orphans=orphans)


def _resend_queued(*, now: Any, enqueue_stale: timedelta, queued_stale: timedelta, skip: set[int]) -> list[int]:
    """The outbox relay: send QUEUED rows that never reached the broker, or whose message may have been lost."""
    unsent = Q(enqueued_at__isnull=True, queued_at__lt=now - enqueue_stale)
    forgotten = Q(enqueued_at__lt=now - queued_stale)
    rows = list(
        Evaluation.objects.filter(Q(status=Evaluation.Status.QUEUED, is_current=True) & (unsent | forgotten))
        .exclude(pk__in=skip)
        .order_by("pk")
    )
    if not rows:
        return []
    with transaction.atomic():
        outcome = evaluations_enqueue(evaluations=rows)
        # Its upload's static audit was most likely lost with it (both are sent after the same commit).
        kernels_audit_enqueue(kernel_ids=sorted({ev.kernel_id for ev in rows if ev.enqueued_at is None}))
    return [ev.pk for ev in rows if ev.pk not in outcome.unsent]
