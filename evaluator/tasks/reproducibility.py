"""Periodic and after-the-fact tasks of reproducible verdicts: reveal due master seeds, re-evaluate champions
measured on an older stack, and call an account's webhook when a submission finishes. Thin adapters over
evaluator.services.seeds, .reruns and .webhooks."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

log = logging.getLogger(__name__)


@shared_task(name="evaluator.reveal_seeds", ignore_result=True)
def reveal_seeds() -> int:
    """Reveal the master seeds that are due (superseded evaluations, or SEEDS_REVEAL_AFTER_DAYS old)."""
    from evaluator.services.seeds import seeds_reveal_due

    return seeds_reveal_due()


@shared_task(name="evaluator.rerun_champions", ignore_result=True)
def rerun_champions(hardware: str | None = None, **kwargs: Any) -> dict[str, list[int]]:
    """Queue re-evaluations of ranked kernels measured on another stack than their workers run now."""
    from evaluator.services.reruns import champions_rerun

    return {plan.hardware: plan.queued for plan in champions_rerun(hardware=hardware)}


@shared_task(
    name="evaluator.deliver_webhook",
    bind=True,
    acks_late=True,
    ignore_result=True,
    max_retries=settings.WEBHOOK_MAX_RETRIES,
)
def deliver_webhook(self: Any, submission_id: int, delivery_id: str = "", **kwargs: Any) -> None:
    """POST the finished submission `submission_id` to its uploader's webhook; retried with backoff on failure,
    each retry with the same `delivery_id` (the event's webhook-id)."""
    from evaluator.services.webhooks import WebhookFailed, new_delivery_id, webhook_deliver

    delivery_id = delivery_id or new_delivery_id()  # a message from before delivery ids: one for all its retries
    try:
        webhook_deliver(submission_id=submission_id, attempt=self.request.retries + 1, delivery_id=delivery_id)
    except WebhookFailed as exc:
        if self.request.retries >= self.max_retries:
            log.warning("webhook for submission %s given up: %s", submission_id, exc)
            return
        raise self.retry(
            exc=exc, countdown=min(600, 5 * 2**self.request.retries), kwargs={"delivery_id": delivery_id}
        ) from exc
