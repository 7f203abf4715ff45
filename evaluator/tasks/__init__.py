"""Celery tasks of the evaluator (autodiscovered). Each module is a thin adapter over services."""

from evaluator.tasks import audit, evaluation, profile, reproducibility  # noqa: F401  (registers the tasks)
