"""Celery tasks of the reward-hack audit: thin adapters over evaluator.services.audit (ids in, nothing out).

Judge calls are network-bound, so they run on the default queue, never on a GPU queue.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

log = logging.getLogger(__name__)

# A judge call may take AUDIT_JUDGE_TIMEOUT, with one client retry and up to two repair rounds.
_JUDGE_SOFT_LIMIT = int(getattr(settings, "AUDIT_JUDGE_TIMEOUT", 120)) * 6 + 30


@shared_task(
    name="evaluator.judge_kernel",
    acks_late=True,
    ignore_result=True,
    soft_time_limit=_JUDGE_SOFT_LIMIT,
    time_limit=_JUDGE_SOFT_LIMIT + 30,
)
def judge_kernel(
    kernel_id: int, judge_name: str | None = None, evaluation_id: int | None = None, force: bool = False, **kwargs: Any
) -> None:
    """Ask one configured LLM judge (or all of them when `judge_name` is None) about one kernel.

    Idempotent: the service skips a kernel this judge already judged unless `force`. Failures of the judge
    (timeouts, invalid answers) are recorded as audit_error flags by the service, not raised.
    """
    from evaluator.audit.config import configured_judges
    from evaluator.services.audit import kernel_judge

    if kwargs:
        log.warning("judge_kernel(%s): ignoring unknown arguments %s", kernel_id, sorted(kwargs))
    names = [j.name for j in configured_judges() if judge_name in (None, j.name)]
    if not names:
        log.warning("judge_kernel(%s): no judge named %r is configured", kernel_id, judge_name)
    for name in names:
        kernel_judge(kernel_id=kernel_id, judge_name=name, evaluation_id=evaluation_id, force=force)


@shared_task(name="evaluator.audit_kernels_static", acks_late=True, ignore_result=True)
def audit_kernels_static(kernel_ids: list[int], **kwargs: Any) -> None:
    """Static audit of every kernel of an upload (sent once per submission, after it commits)."""
    from evaluator.services.audit import kernels_audit_static

    kernels_audit_static(kernel_ids=kernel_ids)
