"""`manage.py reap_evaluations`: recover evaluations whose worker or message was lost (see evaluations_reap)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand

from evaluator.services.queues import time_limits
from evaluator.services.reaping import evaluations_reap


class Command(BaseCommand):
    help = (
        "Requeue RUNNING evaluations whose heartbeat stopped (EVALUATOR_HEARTBEAT_STALE) or that outlived the Celery "
        "hard time limit, or mark them FAILED after EVALUATOR_MAX_ATTEMPTS; send QUEUED evaluations whose message "
        "never reached the broker; remove dead workers' harnesses and work folders on this machine. Safe to run at "
        "any time, e.g. from cron every minute (Celery beat runs it every EVALUATOR_REAP_INTERVAL seconds)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--stale-after",
            type=float,
            default=None,
            help=f"seconds a RUNNING row may age before it counts as lost (default: hard limit + 60 = "
            f"{time_limits().hard + 60})",
        )

    def handle(self, *args: Any, stale_after: float | None = None, **options: Any) -> None:
        delta = timedelta(seconds=stale_after) if stale_after is not None else None
        result = evaluations_reap(stale_after=delta)
        self.stdout.write(f"requeued {len(result.requeued)}: {result.requeued}")
        self.stdout.write(f"failed {len(result.failed)}: {result.failed}")
        self.stdout.write(f"sent {len(result.resent)} queued: {result.resent}")
        if result.broker:
            self.stdout.write(
                f"broker queues: {result.broker}; lost messages re-sent {len(result.lost)}: {result.lost}"
            )
        self.stdout.write(f"orphaned work folders removed {len(result.orphans)}: {result.orphans}")
