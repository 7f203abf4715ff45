"""The services' way to send a Celery task: by its registered name, from Celery's registry.

Tasks are thin adapters that call the services, so the services sit below them and never import `evaluator.tasks`
(tests/foundation/test_import_graph.py keeps it so). A service sends a task with `task(NAME).apply_async(...)`,
usually from `transaction.on_commit`. Every process that sends has the tasks registered: `EvaluatorConfig.ready`
imports `evaluator.tasks` when Django starts, and a Celery worker autodiscovers them. The object returned is the task
itself, so `apply_async`, `delay` and eager mode behave as with an import.
"""

from __future__ import annotations

from typing import Any

from celery import current_app

EVALUATE_KERNEL = "evaluator.evaluate_kernel"
AUDIT_KERNELS_STATIC = "evaluator.audit_kernels_static"
JUDGE_KERNEL = "evaluator.judge_kernel"
PROFILE_EVALUATION = "evaluator.profile_evaluation"
DELIVER_WEBHOOK = "evaluator.deliver_webhook"


def task(name: str) -> Any:
    """The registered task called `name` (KeyError if no such task is registered)."""
    return current_app.tasks[name]
