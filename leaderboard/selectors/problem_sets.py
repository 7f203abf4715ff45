"""Which problem sets exist, and which one an upload targets when it names none."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Max

from catalogue.models import Problem


def problem_sets() -> list[str]:
    """Problem-set labels that have problems, the most recently imported first."""
    rows = Problem.objects.order_by().values("problem_set").annotate(newest=Max("created_at"))
    return [r["problem_set"] for r in sorted(rows, key=lambda r: (r["newest"], r["problem_set"]), reverse=True)]


def problem_set_default() -> str:
    """PROBLEM_SET_DEFAULT when it has problems, else the most recently imported set (a fresh `make run` has only
    `demo`). With no problems at all it stays the setting, and an upload is refused with the list of valid sets."""
    configured = settings.PROBLEM_SET_DEFAULT
    sets = problem_sets()
    if configured in sets or not sets:
        return configured
    return sets[0]


def unknown_problem_set_message(problem_set: str) -> str:
    sets = problem_sets()
    if not sets:
        return (
            f"Unknown problem set {problem_set!r}: no problems are imported yet "
            "(`manage.py load_demo` or `manage.py import_problems PATH`)."
        )
    return f"Unknown problem set {problem_set!r}. Valid problem sets: {', '.join(sorted(sets))}."
