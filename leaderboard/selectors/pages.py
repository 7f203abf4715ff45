"""Reads for the problem and LLM pages. Each page is a handful of fixed queries (no per-row queries)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Exists, OuterRef, QuerySet
from django.shortcuts import get_object_or_404

from evaluator.models import AuditFlag, Baseline, Evaluation
from leaderboard.models import LLM, Problem, Submission
from leaderboard.selectors.ranking import with_eligibility

OPEN_REVIEW_STATES = (AuditFlag.Review.SUSPECTED, AuditFlag.Review.CORROBORATED)
KERNELS_PER_PAGE = 100


def evaluations_with_verdicts() -> QuerySet[Evaluation]:
    """Evaluations annotated with `is_confirmed_hack`, `eligible` (the one rule) and `has_open_flag`."""
    open_flag = Exists(AuditFlag.objects.filter(kernel_id=OuterRef("kernel_id"), review_state__in=OPEN_REVIEW_STATES))
    return (
        with_eligibility(Evaluation.objects.all())
        .annotate(has_open_flag=open_flag)
        .select_related("kernel", "kernel__llm", "kernel__problem", "kernel__submission")
    )


def _ranked(evaluations: list[Evaluation]) -> list[Evaluation]:
    """Eligible kernels first, fastest first; then everything else (confirmed hacks, incorrect, errors)."""
    return sorted(
        evaluations,
        key=lambda e: (not e.eligible, e.correct is not True, -(e.speedup or 0.0), e.kernel.llm.name, e.kernel.sample),
    )


@dataclass
class ProblemPage:
    problem: Problem
    other_versions: list[Problem]
    baselines: list[Baseline]
    evaluations: list[Evaluation]  # current, finished or not, ranked
    hardware: list[str]


def problem_page(*, pk: int, hardware: str | None = None) -> ProblemPage:
    """A problem, its other source versions, its baselines and every evaluated kernel, ranked."""
    problem = get_object_or_404(Problem, pk=pk)
    other_versions = list(
        Problem.objects.filter(problem_set=problem.problem_set, level=problem.level, problem_id=problem.problem_id)
        .exclude(pk=problem.pk)
        .only("pk", "sha256", "is_latest", "created_at", "level", "problem_id", "name")
    )
    baselines = list(Baseline.objects.filter(problem=problem).order_by("hardware", "precision", "-measured_at"))
    evaluations = evaluations_with_verdicts().filter(kernel__problem=problem, is_current=True)
    all_hardware = sorted({e.hardware for e in evaluations} | {b.hardware for b in baselines})
    if hardware:
        evaluations = evaluations.filter(hardware=hardware)
    return ProblemPage(problem, other_versions, baselines, _ranked(list(evaluations)), all_hardware)


@dataclass
class LLMPage:
    llm: LLM
    submissions: list[Submission]
    kernels: Page  # of Evaluation rows (current, on the chosen hardware)


def llm_page(*, pk: int, hardware: str, level: int | None = None, page: int | str = 1) -> LLMPage:
    """An LLM, its submissions and one page of its kernels' current evaluations on one hardware kind."""
    llm = get_object_or_404(LLM.objects.select_related("owner", "owner_group"), pk=pk)
    submissions = list(Submission.objects.filter(llm=llm).order_by("-created_at"))
    evaluations = (
        evaluations_with_verdicts()
        .filter(kernel__llm=llm, is_current=True, hardware=hardware)
        .order_by("kernel__problem__level", "kernel__problem__problem_id", "kernel__sample")
    )
    if level:
        evaluations = evaluations.filter(kernel__problem__level=level)
    return LLMPage(llm, submissions, Paginator(evaluations, KERNELS_PER_PAGE).get_page(page))
