"""The profile task: a thin adapter over evaluator.services.profiles, on the evaluation's hardware queue."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="evaluator.profile_evaluation", acks_late=True, ignore_result=True)
def profile_evaluation(request_id: int) -> None:
    from evaluator.services.profiles import profile_run

    profile_run(request_id=request_id)
