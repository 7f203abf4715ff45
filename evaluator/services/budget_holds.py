"""Writes about the GPU-seconds queued evaluations hold: admit what the budgets can hold, one account at a time.

Admitting an evaluation stamps its `enqueued_at` before its message is sent, inside a transaction that locks the
uploaders' rows, so two uploads (or an upload and a finish) of one account never both fit the last of its budget
(evaluator.selectors.budget_admission says what holds what).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from evaluator.models import Evaluation
from evaluator.selectors.budget_admission import budget_admitted


def evaluations_admit(*, evaluation_ids: list[int]) -> set[int]:
    """Mark as sent (they now hold their bound) the queued evaluations their budgets can hold; return their ids
    with those already sent. The caller sends them, and unmarks any whose message does not reach the broker."""
    if not evaluation_ids:
        return set()
    with transaction.atomic():
        uploaders = Evaluation.objects.filter(pk__in=evaluation_ids).values("kernel__submission__uploader_id")
        list(get_user_model().objects.select_for_update().filter(pk__in=uploaders).values_list("pk", flat=True))
        admitted = budget_admitted(evaluation_ids=evaluation_ids)
        Evaluation.objects.filter(pk__in=admitted, status=Evaluation.Status.QUEUED, enqueued_at=None).update(
            enqueued_at=timezone.now()
        )
    return admitted
