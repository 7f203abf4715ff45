"""Which problem sets exist, and which one an upload (and a page) targets when it names none.

The default follows the deployment's upload hardware (EVALUATOR_DEFAULT_HARDWARE), not whichever set was loaded
last: a CPU install uploads to the CPU-sized demo set even after `make run` loaded GPU results on the full-size
KernelBench set, whose problems take minutes each on a CPU (and a run folder written for them does not fit the demo's
`forward`). An explicit PROBLEM_SET_DEFAULT still wins whenever that set has problems.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Max

from catalogue.models import Problem
from evaluator.hardware import is_cpu

# The label a set gets when nobody names one: the full-size benchmark (`import_problems`), the project's demo.
KERNELBENCH_SET = "kernelbench-main"
DEMO_SET = "demo"


def _set_rows() -> list[tuple[str, bool, object]]:
    """(set, holds demo problems, newest import) per set and kind, newest first: one query."""
    rows = Problem.objects.order_by().values("problem_set", "is_demo").annotate(newest=Max("created_at"))
    ordered = sorted(rows, key=lambda r: (r["newest"], r["problem_set"]), reverse=True)
    return [(r["problem_set"], r["is_demo"], r["newest"]) for r in ordered]


def _unique(labels: list[str]) -> list[str]:
    return list(dict.fromkeys(labels))


def problem_sets(*, demo: bool | None = None) -> list[str]:
    """Problem-set labels that have problems, the most recently imported first. `demo=True`: only sets holding
    CPU-sized demo problems; `demo=False`: only sets holding full-size ones."""
    return _unique([s for s, is_demo, _ in _set_rows() if demo is None or is_demo == demo])


def _default(hardware: str, rows: list[tuple[str, bool, object]]) -> tuple[str, list[str]]:
    """(the upload default, the sets that fit the hardware newest first) from one read of _set_rows()."""
    configured = settings.PROBLEM_SET_DEFAULT
    sets = _unique([s for s, _, _ in rows])
    fitting = _unique([s for s, is_demo, _ in rows if is_demo == is_cpu(hardware)])
    if configured and (configured in sets or not sets):
        return configured, fitting
    if not sets:
        return (DEMO_SET if is_cpu(hardware) else KERNELBENCH_SET), fitting
    return (fitting[0] if fitting else sets[0]), fitting


def problem_set_default(*, hardware: str | None = None) -> str:
    """The set an upload to `hardware` (default: EVALUATOR_DEFAULT_HARDWARE) targets when it names none.

    PROBLEM_SET_DEFAULT when it is set and has problems; else the newest set with problems for that hardware (a
    fresh `make run`: `demo` on the CPU, whatever GPU results it loaded); else the newest set. With no problems at
    all it is the setting (or the label such a set would get), and an upload is refused with the list of valid sets.
    """
    return _default(hardware or settings.EVALUATOR_DEFAULT_HARDWARE, _set_rows())[0]


def problem_set_default_among(*, hardware: str, sets: list[str]) -> str:
    """The set a page for `hardware` opens on, among `sets` (those it has results for): the upload default when it
    is one of them, else the newest that fits the hardware, else the first."""
    preferred, fitting = _default(hardware, _set_rows())
    if preferred in sets or not sets:
        return preferred
    fitting = [s for s in fitting if s in sets]
    return fitting[0] if fitting else sorted(sets)[0]


def unknown_problem_set_message(problem_set: str) -> str:
    sets = problem_sets()
    if not sets:
        return (
            f"Unknown problem set {problem_set!r}: no problems are imported yet "
            "(`manage.py load_demo` or `manage.py import_problems PATH`)."
        )
    return f"Unknown problem set {problem_set!r}. Valid problem sets: {', '.join(sorted(sets))}."
