"""The reaper: recover evaluations whose worker or message was lost (celery beat, or `manage.py reap_evaluations`)."""

from __future__ import annotations

import contextlib
import logging
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
from evaluator.services.evaluations import evaluation_fail, evaluations_enqueue, kernels_audit_enqueue
from evaluator.services.queues import queue_for, rerun_queue_for, time_limits

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReapResult:
    requeued: list[int]
    failed: list[int]
    resent: list[int] = field(default_factory=list)  # QUEUED rows whose message was re-sent
    orphans: list[str] = field(default_factory=list)  # work folders of dead workers' harnesses, removed
    # The broker's own view: {queue: messages waiting} for the queues with waiting rows, or the reason it could not
    # be read ("" when no row was waiting long enough to ask).
    broker: dict[str, int] | str = ""
    lost: list[int] = field(default_factory=list)  # QUEUED rows re-sent because their broker queue had lost them


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
      broker was down at upload) are sent, with their kernel's static audit, and so are rows a compute budget
      held back once it can hold them (evaluator.selectors.budget_admission); QUEUED rows sent longer ago than
      EVALUATOR_QUEUED_STALE are sent again (a broker that lost its messages). A duplicate message is harmless:
      the claim is a compare-and-set, so an evaluation still runs and is counted once;
    - the broker's own queue lengths are read, and QUEUED rows sent more than EVALUATOR_LOST_QUEUE_AFTER ago that
      their queue no longer holds are sent again (a lost queue noticed within minutes: _resend_lost);
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
    broker, lost_queued = _resend_lost(
        now=now, after=_seconds("EVALUATOR_LOST_QUEUE_AFTER", 120), skip={*requeued, *resent}
    )
    from evaluator.orphans import orphans_remove

    orphans = orphans_remove(Path(settings.EVALUATOR_WORK_DIR))
    return ReapResult(
        requeued=requeued,
        failed=failed,
        resent=[*resent, *lost_queued],
        orphans=orphans,
        broker=broker,
        lost=lost_queued,
    )


def broker_queue_lengths(queues: list[str]) -> dict[str, int]:
    """Messages waiting in each broker queue, asked of the broker itself (a passive declare: nothing is created; a
    queue the broker does not have holds 0). Raises when the broker cannot be reached."""
    from celery import current_app

    lengths: dict[str, int] = {}
    with current_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1)
        for queue in queues:
            channel = conn.channel()  # a failed passive declare closes an AMQP channel: one each
            try:
                lengths[queue] = int(channel.queue_declare(queue=queue, passive=True).message_count)
            except conn.channel_errors:
                lengths[queue] = 0  # no such queue: the broker lost it with its messages
            finally:
                with contextlib.suppress(Exception):
                    channel.close()
    return lengths


def _resend_lost(*, now: Any, after: timedelta, skip: set[int]) -> tuple[dict[str, int] | str, list[int]]:
    """A broker that lost its queue (a restart without persistence, a flushed Redis), noticed within minutes.

    Each queue is first in, first out, so the messages it still holds are those of its newest waiting rows. For
    each queue (a hardware's uploads queue, and its re-run queue for the re-evaluations) with L messages waiting,
    the sent QUEUED rows older than `after` that are not among its L newest waiting rows are no longer in the queue
    and nobody claimed them: they are sent again, each to the queue it was on (a duplicate is harmless: the claim
    is a compare-and-set). A row waiting for a retry's backoff (attempts > 0: the worker holds that message) is
    given the longest backoff on top. An unreachable broker is reported and changes nothing.
    """
    rows_waiting = list(
        Evaluation.objects.filter(status=Evaluation.Status.QUEUED, is_current=True, enqueued_at__isnull=False)
        .exclude(pk__in=skip)
        .order_by("-enqueued_at", "-pk")
        .values_list("pk", "hardware", "enqueued_at", "attempts", "re_evaluation__id")
    )
    # Each row with the queue it was sent to: re-evaluations wait on their hardware's re-run queue, not its uploads.
    waiting = [
        (pk, rerun_queue_for(hw) if rerun else queue_for(hw), sent, attempts)
        for pk, hw, sent, attempts, rerun in rows_waiting
    ]
    retry_grace = timedelta(seconds=600)  # queues.retry_countdown's cap
    old = [row for row in waiting if row[2] < now - after - (retry_grace if row[3] else timedelta(0))]
    if not old:
        return "", []
    queues = sorted({queue for _, queue, _, _ in old})
    try:
        lengths = broker_queue_lengths(queues)
    except Exception as exc:  # unreachable: the outbox relay above sends once it is back
        log.warning("reaper: broker unreachable, lost queues not checked (%s)", exc)
        return f"unreachable: {type(exc).__name__}: {exc}", []
    lost_ids: list[int] = []
    for queue in queues:
        rows = [row for row in waiting if row[1] == queue]  # newest first
        in_queue = {pk for pk, _, _, _ in rows[: lengths.get(queue, 0)]}
        lost_ids += [row[0] for row in old if row[1] == queue and row[0] not in in_queue]
    if not lost_ids:
        return lengths, []
    rows_lost = list(Evaluation.objects.filter(pk__in=lost_ids, status=Evaluation.Status.QUEUED).order_by("pk"))
    log.warning(
        "reaper: %s queued evaluations missing from the broker's queues %s: sent again", len(rows_lost), lengths
    )
    with transaction.atomic():
        outcome = evaluations_enqueue(evaluations=rows_lost)  # each to its own queue again (evaluation_queue)
    return lengths, [ev.pk for ev in rows_lost if ev.pk not in outcome.unsent]


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
        # Its upload's static audit was most likely lost with it (both are sent after the same commit); a row a
        # budget still holds back is not sent now, and its audit went with its upload.
        never_sent = [ev for ev in rows if ev.enqueued_at is None]
        transaction.on_commit(  # after evaluations_enqueue's own: `outcome.held` is known then
            lambda: kernels_audit_enqueue(
                kernel_ids=sorted({ev.kernel_id for ev in never_sent if ev.pk not in outcome.held})
            )
        )
    return [ev.pk for ev in rows if ev.pk not in outcome.unsent]
