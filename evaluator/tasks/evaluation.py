"""Celery tasks that run harness evaluations: thin adapters over evaluator.services.evaluations.

The worker never imports torch: `evaluator.runner.run_evaluation` runs the candidate in a subprocess harness.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready
from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)


@shared_task(
    name="evaluator.evaluate_kernel",
    bind=True,
    acks_late=True,
    ignore_result=True,
    # Retries are decided from the row's own attempt counter (evaluation_retry_or_fail); this is a backstop.
    max_retries=settings.EVALUATOR_MAX_ATTEMPTS,
)
def evaluate_kernel(self: Any, evaluation_id: int, **kwargs: Any) -> None:
    """Claim evaluation `evaluation_id`, run the harness on it and store the result record.

    A duplicate or redelivered message finds the row already claimed and returns. Only `InfraError` (the
    machinery failed, not the kernel) is retried, with backoff, up to EVALUATOR_MAX_ATTEMPTS.
    """
    from evaluator import runner
    from evaluator.services import evaluations as svc
    from evaluator.services import queues

    if kwargs:  # messages from a newer or older deployment: log and carry on (Read the Docs' rule)
        log.warning("evaluate_kernel(%s): ignoring unknown arguments %s", evaluation_id, sorted(kwargs))
    from evaluator.services.reruns import rerun_defer, rerun_should_wait

    queue = (self.request.delivery_info or {}).get("routing_key") or "?"
    log.info("evaluation %s taken from queue %s", evaluation_id, queue)  # uploads, or the re-runs below them

    # The site's own re-runs stay below uploads: while one of its hardware waits, a re-run goes back to its queue.
    if rerun_should_wait(evaluation_id=evaluation_id) and rerun_defer(evaluation_id=evaluation_id):
        return
    evaluation = svc.evaluation_claim(evaluation_id=evaluation_id, worker=self.request.hostname or "")
    if evaluation is None:
        return
    from evaluator.selectors.budget import budget_spent

    if spent := budget_spent(evaluation=evaluation):  # the account's GPU-seconds for the day went to other kernels
        svc.evaluation_fail(evaluation=evaluation, error=spent)
        return
    try:
        with _heartbeat(evaluation):
            record = runner.run_evaluation(**svc.harness_arguments(evaluation))
    except runner.InfraError as exc:
        log.warning("evaluation %s: infrastructure error on attempt %s: %s", evaluation_id, evaluation.attempts, exc)
        if svc.evaluation_retry_or_fail(evaluation=evaluation, error=f"infrastructure error: {exc}"):
            # Explicit queue: the retry must reach a worker for the same hardware, whatever the delivery info says,
            # and a re-run stays on the re-run queue (below uploads).
            raise self.retry(
                exc=exc,
                countdown=queues.retry_countdown(evaluation.attempts),
                queue=queues.evaluation_queue(evaluation),
            ) from exc
        return
    except SoftTimeLimitExceeded:
        svc.evaluation_finish(evaluation=evaluation, record=svc.timeout_record(seconds=queues.time_limits().soft))
        return
    except Exception as exc:  # a bug on our side: record it rather than leave the row RUNNING until the reaper
        log.exception("evaluation %s: unexpected error", evaluation_id)
        svc.evaluation_fail(evaluation=evaluation, error=f"internal error: {type(exc).__name__}: {exc}")
        return
    result = svc.evaluation_record(evaluation=evaluation, record=record)  # typed once; None: failed as malformed
    if result is not None and svc.evaluation_finish(evaluation=evaluation, record=result):
        _audit_runtime(evaluation_id)


@contextlib.contextmanager
def _heartbeat(evaluation: Any) -> Iterator[None]:
    """Refresh the row's heartbeat every EVALUATOR_HEARTBEAT_INTERVAL seconds while the harness runs, from a thread
    (the reaper requeues a row whose heartbeat stops: this worker died)."""
    from evaluator.services.evaluations import evaluation_heartbeat

    stop = threading.Event()
    interval = float(settings.EVALUATOR_HEARTBEAT_INTERVAL)

    def beat() -> None:
        try:
            while not stop.wait(interval):
                try:
                    if not evaluation_heartbeat(evaluation=evaluation):
                        return  # reaped or finished elsewhere: nothing left to vouch for
                except Exception:
                    log.exception("evaluation %s: heartbeat failed", evaluation.pk)
        finally:
            connection.close()  # this thread's own database connection

    thread = threading.Thread(target=beat, name=f"heartbeat-{evaluation.pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


@worker_ready.connect
def _remove_orphans(**kwargs: Any) -> None:
    """A worker starting on a machine removes the harnesses and work folders its dead predecessors left there."""
    from evaluator import runner

    with contextlib.suppress(Exception):
        removed = runner.orphans_remove(settings.EVALUATOR_WORK_DIR)
        if removed:
            log.warning("removed %s orphaned harness work folders: %s", len(removed), removed)


def _audit_runtime(evaluation_id: int) -> None:
    """Runtime-signal flags (and judge requests for fast correct kernels); never lose a stored result over them."""
    from evaluator.services.audit import kernel_audit_runtime

    try:
        kernel_audit_runtime(evaluation_id=evaluation_id)
    except Exception:
        log.exception("evaluation %s: runtime audit failed (the result is stored)", evaluation_id)


@shared_task(name="evaluator.reap_evaluations", ignore_result=True)
def reap_evaluations() -> dict[str, list[int]]:
    """Requeue or fail evaluations whose worker died (schedule it with celery beat, or run the command)."""
    from evaluator.services.reaping import evaluations_reap

    result = evaluations_reap()
    return {"requeued": result.requeued, "failed": result.failed, "resent": result.resent}
