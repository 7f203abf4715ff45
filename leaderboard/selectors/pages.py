"""Reads for the problem and LLM pages. Each page is a handful of fixed queries (no per-row queries)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.shortcuts import get_object_or_404

from catalogue.models import LLM, Problem, Submission
from evaluator.audit.runtime_signals import CPU_NOISY_RULES
from evaluator.models import AuditFlag, Baseline, Evaluation
from leaderboard.selectors.ranking import leaderboard_data, with_eligibility
from leaderboard.selectors.ranking_compute import EligibleEvaluation

OPEN_REVIEW_STATES = (AuditFlag.Review.SUSPECTED, AuditFlag.Review.CORROBORATED)
# An information- or low-level rule fires on nearly every kernel (all the demo kernels): only a suspicion or a hack
# of medium severity and above earns the "flagged" badge in lists (`no_custom_kernel` is a medium-severity
# *information*: policy, not fraud); the inspector still lists every flag.
BADGE_SEVERITIES = (AuditFlag.Severity.MEDIUM, AuditFlag.Severity.HIGH)
BADGE_VERDICTS = (AuditFlag.Verdict.SUSPICIOUS, AuditFlag.Verdict.HACK)
KERNELS_PER_PAGE = 100


def evaluations_with_verdicts() -> QuerySet[EligibleEvaluation]:
    """Evaluations annotated with `is_confirmed_hack`, `eligible` (the one rule) and `has_open_flag` (an unreviewed
    suspicion or hack of medium severity or above)."""
    open_flag = Exists(
        AuditFlag.objects.filter(
            kernel_id=OuterRef("kernel_id"),
            review_state__in=OPEN_REVIEW_STATES,
            severity__in=BADGE_SEVERITIES,
            verdict__in=BADGE_VERDICTS,
        ).exclude(  # a clock comparison's failure on a CPU is timing noise, not a suspicion (inspector.cpu_noise)
            source=AuditFlag.Source.RUNTIME, source_name__in=CPU_NOISY_RULES, raw__hardware__istartswith="cpu"
        )
    )
    return (
        with_eligibility(Evaluation.objects.all())
        .annotate(has_open_flag=open_flag)
        .select_related("kernel", "kernel__llm", "kernel__problem", "kernel__submission")
    )


def _ranked(evaluations: list[EligibleEvaluation]) -> list[EligibleEvaluation]:
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
    evaluations: list[EligibleEvaluation]  # current, finished or not, ranked
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


def llm_result_views(*, pk: int) -> list[tuple[str, str, int]]:
    """(hardware, problem set, kernels) for every view an LLM has current evaluations in."""
    rows = (
        Evaluation.objects.filter(kernel__llm_id=pk, is_current=True)
        .values_list("hardware", "kernel__problem__problem_set")
        .annotate(n=Count("kernel", distinct=True))
        .order_by()
    )
    return [(hw, ps, n) for hw, ps, n in rows]


def llm_page(
    *, pk: int, hardware: str, problem_set: str | None = None, level: int | None = None, page: int | str = 1
) -> LLMPage:
    """An LLM, its submissions and one page of its kernels' current evaluations on one hardware kind (and, given
    one, one problem set: the view the page's metrics are for)."""
    llm = get_object_or_404(LLM.objects.select_related("owner", "owner_group"), pk=pk)
    submissions = list(Submission.objects.filter(llm=llm).order_by("-created_at"))
    evaluations = (
        evaluations_with_verdicts()
        .filter(kernel__llm=llm, is_current=True, hardware=hardware)
        .order_by("kernel__problem__level", "kernel__problem__problem_id", "kernel__sample")
    )
    if problem_set:
        evaluations = evaluations.filter(kernel__problem__problem_set=problem_set)
    if level:
        evaluations = evaluations.filter(kernel__problem__level=level)
    return LLMPage(llm, submissions, Paginator(evaluations, KERNELS_PER_PAGE).get_page(page))


# --------------------------------------------------------------------------------------------------------------
# Index pages (/problems/, /llms/) and the side-by-side comparison of two LLMs (/compare/)
# --------------------------------------------------------------------------------------------------------------
INDEX_PER_PAGE = 50
_CORRECT_KERNEL = Q(kernels__evaluations__is_current=True, kernels__evaluations__correct=True)


def problem_index(
    *, q: str = "", level: int | None = None, problem_set: str = "", status: str = "", page: int | str = 1
) -> Page:
    """The latest source of every problem, searchable by name and filtered by level, set and active/inactive."""
    problems = Problem.objects.filter(is_latest=True).order_by("problem_set", "level", "problem_id")
    if q:
        problems = problems.filter(Q(name__icontains=q) | Q(filename__icontains=q))
    if level:
        problems = problems.filter(level=level)
    if problem_set:
        problems = problems.filter(problem_set=problem_set)
    if status in {"active", "inactive"}:
        problems = problems.filter(active=status == "active")
    problems = problems.annotate(
        kernel_count=Count("kernels", distinct=True),
        llm_count=Count("kernels__llm", distinct=True),
        correct_count=Count("kernels", filter=_CORRECT_KERNEL, distinct=True),
    ).defer("source")
    return Paginator(problems, INDEX_PER_PAGE).get_page(page)


def problem_index_choices() -> dict[str, list]:
    latest = Problem.objects.filter(is_latest=True).order_by()
    return {
        "levels": sorted(set(latest.values_list("level", flat=True))),
        "problem_sets": sorted(set(latest.values_list("problem_set", flat=True))),
    }


def llm_index(*, q: str = "", organisation: str = "", page: int | str = 1) -> Page:
    """Every LLM with its submission, kernel and correct-kernel counts; searchable by name or organisation."""
    llms = LLM.objects.order_by("name")
    if q:
        llms = llms.filter(Q(name__icontains=q) | Q(organisation__icontains=q))
    if organisation:
        llms = llms.filter(organisation=organisation)
    llms = llms.annotate(
        submission_count=Count("submissions", distinct=True),
        kernel_count=Count("kernels", distinct=True),
        problem_count=Count("kernels__problem", distinct=True),
        correct_count=Count("kernels", filter=_CORRECT_KERNEL, distinct=True),
    )
    return Paginator(llms, INDEX_PER_PAGE).get_page(page)


def llm_organisations() -> list[str]:
    return sorted(set(LLM.objects.exclude(organisation="").values_list("organisation", flat=True)))


def llm_boards(*, llm_ids: list[int]) -> dict[int, list[tuple[str, str, int]]]:
    """Per LLM, the boards its results are on: (hardware, problem set, kernels with a current evaluation there),
    most kernels first; one query for a page of the LLM index."""
    rows = (
        Evaluation.objects.filter(kernel__llm_id__in=llm_ids, is_current=True)
        .values_list("kernel__llm_id", "hardware", "kernel__problem__problem_set")
        .annotate(n=Count("kernel", distinct=True))
        .order_by()
    )
    out: dict[int, list[tuple[str, str, int]]] = {}
    for llm_id, hardware, problem_set, n in rows:
        out.setdefault(llm_id, []).append((hardware, problem_set, n))
    return {k: sorted(v, key=lambda b: (-b[2], b[0], b[1])) for k, v in out.items()}


def board_llm_ids(*, hardware: str, problem_set: str, version: str) -> list[int]:
    """The LLMs of one board (all levels), best-ranked first (the cached board)."""
    rows = leaderboard_data(hardware=hardware, problem_set=problem_set, version=version).rows.get(None, [])
    return [row.llm_id for row in rows if not row.is_baseline and row.llm_id is not None]


def compare_preselect(
    *, ranked: list[int], a: int | None, b: int | None, open_sides: set[str]
) -> tuple[int | None, int | None]:
    """The two LLMs /compare/ opens on: those asked for; a side in `open_sides` (the query does not name it) takes
    the board's best-ranked LLM not already on the other side (`ranked`: the board's LLM ids, best first)."""
    if "a" in open_sides:
        a = next((pk for pk in ranked if pk != b), None)
    if "b" in open_sides:
        b = next((pk for pk in ranked if pk != a), None)
    return a, b


@dataclass
class CompareRow:
    level: int
    problem_id: int
    name: str
    problem_pk: int
    a: EligibleEvaluation | None  # each LLM's best current evaluation of the problem (ranked first), or None
    b: EligibleEvaluation | None

    @property
    def same_source(self) -> str:
        """ "identical" when the two kernels are byte for byte the same file, "same code" when only comments,
        docstrings or formatting differ (catalogue.fingerprints), "" otherwise: one kernel timed twice, so any
        difference in speed is noise and neither is faster."""
        if not (self.a and self.b):
            return ""
        a, b = self.a.kernel, self.b.kernel
        if a.sha256 and a.sha256 == b.sha256:
            return "identical"
        if a.fingerprint and a.fingerprint == b.fingerprint:
            return "same code"
        return ""

    @property
    def indistinct(self) -> bool:
        """Both kernels count and their speedups' 95 % confidence intervals overlap: the measurement cannot tell
        which is faster (two copies of one kernel timed on a busy CPU differ by noise alone)."""
        if not (self.a and self.b and self.a.eligible and self.b.eligible):
            return False
        a_lo, a_hi = self.a.speedup_ci_low, self.a.speedup_ci_high
        b_lo, b_hi = self.b.speedup_ci_low, self.b.speedup_ci_high
        if a_lo is None or a_hi is None or b_lo is None or b_hi is None:
            return False  # no interval (imported figures): the point values decide
        return a_lo <= b_hi and b_lo <= a_hi

    @property
    def winner(self) -> str:
        """ "a" or "b" when only one is eligible, or both are and one is distinguishably faster; "" otherwise."""
        a_ok, b_ok = bool(self.a and self.a.eligible), bool(self.b and self.b.eligible)
        if self.same_source and a_ok == b_ok:  # one source: no winner on timing noise
            return ""
        if a_ok != b_ok:
            return "a" if a_ok else "b"
        if self.indistinct:
            return ""
        a_speedup = self.a.speedup if self.a else None
        b_speedup = self.b.speedup if self.b else None
        if a_ok and b_ok and a_speedup and b_speedup and a_speedup != b_speedup:
            return "a" if a_speedup > b_speedup else "b"
        return ""


@dataclass
class ComparePage:
    a: LLM | None
    b: LLM | None
    rows: list[CompareRow]
    # "a", "b", "same" (one source on both sides), "indistinct" (both count, intervals overlap), "tie" (neither counts,
    # or equal)
    wins: dict[str, int]
    correct: dict[str, int]  # problems with an eligible kernel, per side


def compare_page(*, a_pk: int | None, b_pk: int | None, hardware: str, problem_set: str) -> ComparePage:
    """Two LLMs side by side, per problem: each one's best current evaluation (eligible first, then fastest)."""
    a = LLM.objects.filter(pk=a_pk).first() if a_pk else None
    b = LLM.objects.filter(pk=b_pk).first() if b_pk else None
    if not (a and b):
        return ComparePage(a, b, [], {"a": 0, "b": 0, "same": 0, "indistinct": 0, "tie": 0}, {"a": 0, "b": 0})
    evaluations = evaluations_with_verdicts().filter(
        kernel__llm__in=[a, b], is_current=True, hardware=hardware, kernel__problem__problem_set=problem_set
    )
    best: dict[tuple[int, int], dict[int, EligibleEvaluation]] = {}
    names: dict[tuple[int, int], tuple[str, int]] = {}
    for ev in _ranked(list(evaluations)):
        problem = ev.kernel.problem
        key = (problem.level, problem.problem_id)
        best.setdefault(key, {}).setdefault(ev.kernel.llm_id, ev)
        if problem.is_latest or key not in names:
            names[key] = (problem.name, problem.pk)
    rows = [
        CompareRow(lv, pid, *names[(lv, pid)], best[(lv, pid)].get(a.pk), best[(lv, pid)].get(b.pk))
        for lv, pid in sorted(best)
    ]
    wins = {"a": 0, "b": 0, "same": 0, "indistinct": 0, "tie": 0}
    for row in rows:
        if row.a and row.b:  # a win only where the measurement tells the two apart
            outcome = row.winner or ("same" if row.same_source else "indistinct" if row.indistinct else "tie")
            wins[outcome] += 1
    correct = {
        "a": sum(1 for r in rows if r.a and r.a.eligible),
        "b": sum(1 for r in rows if r.b and r.b.eligible),
    }
    return ComparePage(a, b, rows, wins, correct)
