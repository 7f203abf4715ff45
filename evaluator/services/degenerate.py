"""Degenerate problems found from the data: a problem whose reference output is the same for every hidden input
distribution (e.g. a max over a size-1 dimension minus its mean) rewards a kernel that returns a constant.

Every result record measures `reference_constant`. After an evaluation finishes (and from `find_degenerate_problems`)
`problem_degenerate_check` looks at all finished evaluations of the problem: when at least
DEGENERATE_MIN_EVALUATIONS of them found the reference constant, and more found it constant than not, the problem
becomes SUSPECTED with the evidence (which evaluations, how many, when) and leaves the rankings (the one rule,
evaluator.selectors.eligibility). Staff confirm or clear it (`problem_degenerate_review`: the problem page's staff
form and the admin action); a cleared problem stays cleared until an evaluation not seen at clearing shows it
constant again. A confirmed problem stays confirmed; its evidence is kept up to date.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalogue.models import Problem
from evaluator.models import Evaluation
from evaluator.results_version import results_changed

EVIDENCE_IDS_KEPT = 100
D = Problem.Degenerate


def min_evaluations() -> int:
    return int(getattr(settings, "DEGENERATE_MIN_EVALUATIONS", 2))


def degenerate_reason(evidence: dict[str, Any]) -> str:
    """The sentence shown as the problem's inactive reason."""
    if evidence.get("reason"):
        return str(evidence["reason"])[:500]
    return (
        f"Degenerate: the reference output was constant across the hidden distributions in {evidence['count']}"
        f" evaluation{'s' if evidence['count'] != 1 else ''} ({evidence.get('varying', 0)} not)."
    )[:500]


def _evidence(problem_id: int) -> dict[str, Any] | None:
    """The evidence from finished evaluations of one problem, or None when it does not show it degenerate."""
    rows = list(
        Evaluation.objects.filter(
            kernel__problem_id=problem_id, status=Evaluation.Status.DONE, reference_constant__isnull=False
        )
        .order_by("finished_at", "pk")
        .values_list("pk", "reference_constant", "finished_at", "hardware")
    )
    constant = [r for r in rows if r[1]]
    varying = len(rows) - len(constant)
    if len(constant) < min_evaluations() or len(constant) <= varying:
        return None
    return {
        "source": "evaluations",
        "evaluation_ids": [r[0] for r in constant][-EVIDENCE_IDS_KEPT:],
        "count": len(constant),
        "varying": varying,
        "hardware": sorted({r[3] for r in constant}),
        "first_at": constant[0][2].isoformat() if constant[0][2] else None,
        "last_at": constant[-1][2].isoformat() if constant[-1][2] else None,
        "found_at": timezone.now().isoformat(),
    }


def problem_degenerate_check(*, problem_id: int) -> Problem | None:
    """Mark one problem degenerate when its evaluations show it (see the module). Returns the problem when its
    status or evidence changed, else None."""
    evidence = _evidence(problem_id)
    if evidence is None:
        return None
    with transaction.atomic():
        problem = Problem.objects.select_for_update().get(pk=problem_id)
        old = problem.degenerate_evidence or {}
        if problem.degenerate == D.CONFIRMED:
            problem.degenerate_evidence = {**old, **{k: v for k, v in evidence.items() if k != "source"}}
            problem.save(update_fields=["degenerate_evidence"])
            return problem
        if problem.degenerate == D.CLEARED:
            seen = set(old.get("evaluation_ids") or []) | set(old.get("seen_at_clearing") or [])
            if not set(evidence["evaluation_ids"]) - seen:
                return None  # cleared stays cleared unless new evidence
        elif problem.degenerate == D.SUSPECTED and old.get("evaluation_ids") == evidence["evaluation_ids"]:
            return None
        problem.degenerate = D.SUSPECTED
        problem.degenerate_evidence = evidence
        problem.active = False
        problem.inactive_reason = degenerate_reason(evidence)
        problem.save(update_fields=["degenerate", "degenerate_evidence", "active", "inactive_reason"])
    results_changed()  # the cached boards go stale
    return problem


def problems_degenerate_sweep() -> list[Problem]:
    """Check every problem with an evaluation that found its reference constant (the command and the reaper)."""
    ids = (
        Evaluation.objects.filter(status=Evaluation.Status.DONE, reference_constant=True)
        .values_list("kernel__problem_id", flat=True)
        .distinct()
    )
    return [p for pk in sorted(set(ids)) if (p := problem_degenerate_check(problem_id=pk)) is not None]


def problem_degenerate_review(*, problem: Problem, action: str, user: Any = None, note: str = "") -> Problem:
    """Staff decision: "confirm" keeps the problem out of the rankings for good; "clear" puts it back (until new
    evidence). Both record who, when and the note."""
    if action not in {"confirm", "clear"}:
        raise ValueError(f"unknown action {action!r}: confirm or clear")
    with transaction.atomic():
        problem = Problem.objects.select_for_update().get(pk=problem.pk)
        evidence = dict(problem.degenerate_evidence or {})
        if note:
            evidence["note"] = note[:1000]
        problem.degenerate_reviewed_by = user if getattr(user, "is_authenticated", False) else None
        problem.degenerate_reviewed_at = timezone.now()
        if action == "confirm":
            problem.degenerate = D.CONFIRMED
            problem.active = False
            if not (evidence.get("count") or evidence.get("reason")):
                evidence["reason"] = f"Degenerate (confirmed by staff){': ' + note if note else ''}"
            problem.inactive_reason = degenerate_reason(evidence)
        else:
            # Remember every constant evaluation seen so far: only a later one re-opens the question.
            evidence["seen_at_clearing"] = list(
                Evaluation.objects.filter(kernel__problem=problem, reference_constant=True).values_list("pk", flat=True)
            )[-EVIDENCE_IDS_KEPT * 10 :]
            problem.degenerate = D.CLEARED
            problem.active = True
            problem.inactive_reason = ""
        problem.degenerate_evidence = evidence
        problem.save()
    results_changed()
    return problem
