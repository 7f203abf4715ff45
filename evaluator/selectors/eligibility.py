"""The single eligibility rule of docs/protocol.md section 7. Every ranking, chart and export goes through here
(leaderboard.selectors.ranking and .submissions, the audit queue)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from catalogue.models import Problem
from evaluator.models import AuditFlag, Evaluation, ReEvaluation

DEGENERATE = [Problem.Degenerate.SUSPECTED, Problem.Degenerate.CONFIRMED]


def confirmed_hack_exists() -> Exists:
    """Subquery: the kernel of the outer Evaluation row has a flag a person confirmed as a hack."""
    return Exists(AuditFlag.objects.filter(kernel_id=OuterRef("kernel_id"), review_state=AuditFlag.Review.CONFIRMED))


def standing_q() -> Q:
    """The verdict that stands for a kernel on a hardware kind: its current evaluation, or, while the site's own
    re-evaluation of it for a new stack (evaluator.services.reruns) has no verdict yet (queued, running, or given up
    by the infrastructure), the evaluation it re-runs. A champion waiting for its re-run, even with no worker for
    its hardware, keeps its place on the board."""
    waiting_rerun = ReEvaluation.objects.filter(previous_id=OuterRef("pk"), evaluation__is_current=True).exclude(
        evaluation__status=Evaluation.Status.DONE
    )
    return Q(is_current=True) | Q(Exists(waiting_rerun))


def eligibility_q() -> Q:
    """Conditions on Evaluation rows (annotated with `is_confirmed_hack`) that make a kernel count in rankings:
    the standing evaluation (standing_q: the current one, or a champion's while its re-run waits) passed the verified
    gate, its problem is active and not marked degenerate
    (evaluator.services.degenerate), it is no confirmed hack, and its timing is not unstable (the harness's
    process pairs still disagreed after the most it may run: `timing.unstable` in the record, a figure it cannot
    stand behind; records without the key predate the rule and count)."""
    return (
        standing_q()
        & Q(
            status=Evaluation.Status.DONE,
            correct=True,
            kernel__problem__active=True,
            is_confirmed_hack=False,
        )
        & ~Q(kernel__problem__degenerate__in=DEGENERATE)
        & timing_stable_q()
    )


def timing_stable_q() -> Q:
    """The record's `timing.unstable` is absent or false (the projection's column: false for records without it)."""
    return Q(timing_unstable=False)


def ranked_evaluations(*, hardware: str | None = None) -> QuerySet[Evaluation]:
    """Current evaluations that are eligible for the rankings, optionally on one hardware kind."""
    qs = Evaluation.objects.annotate(is_confirmed_hack=confirmed_hack_exists()).filter(eligibility_q())
    if hardware:
        qs = qs.filter(hardware=hardware)
    return qs


def is_eligible(evaluation: Evaluation) -> bool:
    """Row-level form of the same rule, for pages that show one kernel."""
    return ranked_evaluations().filter(pk=evaluation.pk).exists()
