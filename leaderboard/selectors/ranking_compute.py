"""The board computed from the database, without the cache (docs/protocol.md section 6; the rule is in ranking.py).

Four queries: every finished current evaluation on an active problem as one `Sample` each, the baselines, the set's
active problems, the inactive ones. Repeated runs of one kernel source combine into one sample first."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple, TypeAlias, TypedDict

from django.db.models import BooleanField, Case, Exists, OuterRef, QuerySet, Value, When
from django.db.models.functions import Coalesce, NullIf

from catalogue.models import Problem
from evaluator.models import Baseline, DistributionResult, Evaluation
from evaluator.selectors.eligibility import confirmed_hack_exists, eligibility_q, standing_q
from evaluator.selectors.stacks import stack_q
from leaderboard.selectors.ranking_shapes import (
    BASELINE_ROWS,
    DEFAULT_SORT,
    FAST_P,
    HIDDEN_DISTRIBUTIONS,
    LEVELS,
    Cell,
    LeaderboardData,
    LeaderboardRow,
    best,
    geomean,
    p_label,
    pct,
    sort_rows,
)

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class Eligibility(TypedDict):
    """The columns with_eligibility adds to an evaluation."""

    is_confirmed_hack: bool
    eligible: bool


EligibleEvaluation: TypeAlias = "WithAnnotations[Evaluation, Eligibility]"  # a row of with_eligibility


class Sample(NamedTuple):
    """One finished current evaluation as the board reads it (one query row), or several runs of one kernel
    source combined into one sample (`runs` of them, see _combine_repeats)."""

    llm: int
    name: str  # the LLM's
    problem: int  # Problem pk
    level: int
    pid: int  # the problem's KernelBench id
    pname: str
    kernel: int
    eligible: bool
    speedup: float | None
    speedup_fp32: float | None
    memory: float | None
    std_ok: bool | None  # standard protocol (D1 only) correct
    d1_ok: bool
    hidden_fail: bool
    sha: str  # the kernel's source fingerprint (catalogue.fingerprints), its sha256 where it has none
    hack: bool
    candidate_ms: float | None  # the kernel's paired median (for vs torch.compile)
    sol: float | None  # the record's speed-of-light fraction
    runs: int = 1


def with_eligibility(qs: QuerySet[Evaluation]) -> QuerySet[EligibleEvaluation]:
    """Annotate `is_confirmed_hack` and `eligible` (the one rule of selectors.eligibility, as a column) so a page can
    list every evaluation and still say which ones count."""
    return qs.annotate(is_confirmed_hack=confirmed_hack_exists()).annotate(
        eligible=Case(When(eligibility_q(), then=Value(True)), default=Value(False), output_field=BooleanField())
    )


def _evaluation_samples(*, hardware: str, problem_set: str, stack: str = "") -> list[Sample]:
    """One query: every finished standing evaluation (current, or a champion's while its re-run waits) on an active
    problem, with the eligibility verdict as a column
    (only those measured on `stack`, evaluator.selectors.stacks, when one is named)."""
    d1_passed = Exists(DistributionResult.objects.filter(evaluation_id=OuterRef("pk"), name="D1", passed=True))
    hidden_failed = Exists(
        DistributionResult.objects.filter(
            evaluation_id=OuterRef("pk"), name__in=HIDDEN_DISTRIBUTIONS, passed=False, skipped=False
        )
    )
    rows = (
        with_eligibility(Evaluation.objects.all())
        .filter(standing_q())
        .filter(
            status=Evaluation.Status.DONE,
            hardware=hardware,
            kernel__problem__active=True,
            kernel__problem__problem_set=problem_set,
        )
        .filter(stack_q(stack))
        .annotate(
            d1_passed=d1_passed,
            hidden_failed=hidden_failed,
            source_key=Coalesce(NullIf("kernel__fingerprint", Value("")), "kernel__sha256"),
        )
        .order_by()
        .values_list(
            "kernel__llm_id",
            "kernel__llm__name",
            "kernel__problem_id",
            "kernel__problem__level",
            "kernel__problem__problem_id",
            "kernel__problem__name",
            "kernel_id",
            "eligible",
            "speedup",
            "speedup_fp32",
            "memory_ratio",
            "standard_correct",
            "d1_passed",
            "hidden_failed",
            "source_key",
            "is_confirmed_hack",
            "candidate_ms",
            "speed_of_light_fraction",
        )
    )
    return [Sample._make((*row, 1)) for row in rows]  # the fraction's column is positive and finite or null


def _stored_baselines(*, hardware: str, problem_set: str) -> list[tuple]:
    """One query: every stored Baseline of the board's active problems, oldest first (the newest wins)."""
    return list(
        Baseline.objects.filter(hardware=hardware, problem__active=True, problem__problem_set=problem_set)
        .order_by("measured_at")
        .values_list("problem_id", "problem__level", "precision", "median_ms", "peak_memory_bytes", "evaluations")
    )


def _compile_medians(stored: list[tuple]) -> dict[int, float]:
    """{problem pk: the newest stored torch.compile median} (evaluator.selectors.compile_baseline's rule)."""
    return {pk: ms for pk, _, prec, ms, _, _ in stored if prec == Baseline.Precision.COMPILE and ms and ms > 0}


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _combine_repeats(runs: list[Sample]) -> list[Sample]:
    """One sample per kernel source: evaluations of the same code on one problem (the same fingerprint: copies
    that differ only in comments, docstrings or formatting are the same code) combine into their median speedup
    (and median FP32 speedup and memory ratio), never their best. The combined sample is eligible, standard-correct and
    D1-correct only if every run was, and failed the hidden tests if any run did. Its kernel is the run whose
    speedup is nearest the median."""
    by_source: dict[str, list[Sample]] = defaultdict(list)
    for run in runs:
        by_source[run.sha or f"kernel-{run.kernel}"].append(run)
    combined = []
    for group in by_source.values():
        if len(group) == 1:
            combined.append(group[0])
            continue
        speedup = _median(r.speedup for r in group)
        nearest = min(group, key=lambda r: abs((r.speedup or 0.0) - (speedup or 0.0)))
        combined.append(
            nearest._replace(
                eligible=all(r.eligible for r in group),
                speedup=speedup,
                speedup_fp32=_median(r.speedup_fp32 for r in group),
                memory=_median(r.memory for r in group),
                std_ok=all(r.std_ok for r in group),
                d1_ok=all(r.d1_ok for r in group),
                hidden_fail=any(r.hidden_fail for r in group),
                hack=any(r.hack for r in group),
                candidate_ms=_median(r.candidate_ms for r in group),
                sol=_median(r.sol for r in group),
                runs=len(group),
            )
        )
    return combined


def _decompose(samples: list[Sample]) -> str:
    """Protocol 6 decomposition for one (LLM, problem), on the sample the standard D1-only gate would pick."""
    d1 = [s for s in samples if s.d1_ok]
    chosen = best(d1, "speedup_fp32")
    if chosen is None:
        return "neither"  # fails D1 everywhere: neither refinement changes its verdict
    hidden = bool(chosen.hidden_fail)
    fp32, tf32 = chosen.speedup_fp32, chosen.speedup
    tf32_flip = fp32 is not None and tf32 is not None and (fp32 > 1) != (tf32 > 1)
    if hidden and tf32_flip:
        return "both"
    return "hidden_only" if hidden else "tf32_only" if tf32_flip else "neither"


def _llm_row(
    name: str,
    llm_id: int,
    level: int | None,
    per_problem: dict[int, list[Sample]],
    problems: int,
    compile_ms: Mapping[int, float] | None = None,
) -> LeaderboardRow:
    """`per_problem` holds combined samples (one per kernel source); `problems` is the set's size at this level."""
    attempted = len(per_problem)
    problems = max(problems, attempted)  # an attempted problem always belongs to the set
    chosen = [c for c in (best([s for s in ss if s.eligible], "speedup") for ss in per_problem.values()) if c]
    standard = [c for c in (best([s for s in ss if s.std_ok], "speedup_fp32") for ss in per_problem.values()) if c]
    speedups = [c.speedup for c in chosen]
    ratios = [c.memory for c in chosen if c.memory is not None]
    verified = geomean(speedups)
    std = geomean(c.speedup_fp32 for c in standard)
    return LeaderboardRow(
        kind="llm",
        name=name,
        level=level,
        llm_id=llm_id,
        attempted=attempted,
        correct=len(chosen),
        problems=problems,
        coverage_pct=pct(attempted, problems),
        correctness_pct=pct(len(chosen), attempted),
        speedup=verified,
        # Over the whole set (KernelBench): a problem not attempted or not correct is not fast.
        fast_p={p_label(p): pct(sum(1 for s in speedups if s is not None and s > p), problems) for p in FAST_P},
        memory_efficiency=geomean(ratios),
        mem_efficient_pct=pct(sum(1 for r in ratios if r > 1), len(ratios)),
        mem_increased_pct=pct(sum(1 for r in ratios if r < 1), len(ratios)),
        kernels=sum(s.runs for ss in per_problem.values() for s in ss),
        standard_speedup=std,
        standard_correct=len(standard),
        inflation=std / verified if std and verified else None,
        sol_fraction=geomean([c.sol for c in chosen if c.sol is not None]),
        vs_compile=geomean(
            [
                (compile_ms or {})[c.problem] / c.candidate_ms
                for c in chosen
                if c.candidate_ms and c.problem in (compile_ms or {})
            ]
        ),
    )


def _baseline_rows(
    *, stored: list[tuple], problem_counts: Mapping[int | None, int]
) -> dict[int | None, list[LeaderboardRow]]:
    """Reference rows: TF32 eager is 1.0x by definition; FP32 eager and torch.compile are expressed on the same
    scale (TF32 time / their time) so they read like any kernel's speedup. Each stored Baseline is the median over
    the evaluations of its setting (evaluator.services.baselines); the latest-updated setting per problem wins.
    `evaluations` is how many evaluations the row's baselines aggregate, summed over its problems.
    Their fast_p is over the problems measured (coverage shows how many of the set that is)."""
    latest: dict[tuple[int, str], tuple] = {}
    counts: dict[tuple[int, str], int] = {}
    level_of: dict[int, int] = {}
    for problem_pk, level, precision, median_ms, peak, evaluations in stored:
        latest[(problem_pk, precision)] = (median_ms, peak)
        counts[(problem_pk, precision)] = evaluations
        level_of[problem_pk] = level
    out: dict[int | None, list[LeaderboardRow]] = defaultdict(list)
    for precision, label in BASELINE_ROWS:
        per_problem: dict[int, tuple[float, float | None, int]] = {}
        for (problem_pk, prec), (median_ms, peak) in latest.items():
            tf32 = latest.get((problem_pk, Baseline.Precision.TF32))
            if prec != precision or tf32 is None:
                continue
            ratio = tf32[1] / peak if tf32[1] and peak else None
            per_problem[problem_pk] = (tf32[0] / median_ms, ratio, counts[(problem_pk, prec)])
        if not per_problem:
            continue
        for level in (None, *LEVELS):
            values = [v for pk, v in per_problem.items() if level is None or level_of[pk] == level]
            if not values:
                continue
            speedups = [s for s, _, _ in values]
            ratios = [r for _, r, _ in values if r is not None]
            problems = max(problem_counts.get(level, 0), len(values))
            out[level].append(
                LeaderboardRow(
                    kind="baseline",
                    name=label,
                    level=level,
                    baseline=precision,
                    attempted=len(values),
                    problems=problems,
                    coverage_pct=pct(len(values), problems),
                    speedup=geomean(speedups),
                    fast_p={p_label(p): pct(sum(1 for s in speedups if s > p), len(speedups)) for p in FAST_P},
                    memory_efficiency=geomean(ratios),
                    mem_efficient_pct=pct(sum(1 for r in ratios if r > 1), len(ratios)),
                    mem_increased_pct=pct(sum(1 for r in ratios if r < 1), len(ratios)),
                    evaluations=sum(n for _, _, n in values),
                )
            )
    return out


def _problem_counts(problem_set: str, attempted: Iterable[tuple[int, int]]) -> dict[int | None, int]:
    """Active problems of the set per level (None = all levels): the latest source of each core id, plus any
    attempted (level, id) that is not among them (an older source version still being evaluated)."""
    ids = set(
        Problem.objects.filter(problem_set=problem_set, active=True, is_latest=True, core=True).values_list(
            "level", "problem_id"
        )
    )
    ids |= set(attempted)
    counts: dict[int | None, int] = {None: len(ids)}
    for level, _ in ids:
        counts[level] = counts.get(level, 0) + 1
    return counts


def _rank_key(row: LeaderboardRow) -> tuple:
    """RANKING_RULE: fast_1 over the whole set, then correct problems, then the geomean speedup, then the name."""
    return (-(row.fast_p.get("1") or 0.0), -row.correct, -(row.speedup or 0.0), row.name.lower())


def compute_leaderboard(*, hardware: str, problem_set: str, stack: str = "") -> LeaderboardData:
    """Compute the whole board (every level and overall) without the cache. Four queries in all. `stack`: only
    verdicts measured on that software stack (evaluator.selectors.stacks.stack_label's form)."""
    runs: dict[int, dict[int, list[Sample]]] = defaultdict(lambda: defaultdict(list))  # llm -> problem -> rows
    llms: dict[int, str] = {}
    problems: dict[int, tuple[int, int, str]] = {}
    for s in _evaluation_samples(hardware=hardware, problem_set=problem_set, stack=stack):
        runs[s.llm][s.problem].append(s)
        llms[s.llm] = s.name
        problems[s.problem] = (s.level, s.pid, s.pname)
    problem_counts = _problem_counts(problem_set, ((lv, pid) for lv, pid, _ in problems.values()))
    stored = _stored_baselines(hardware=hardware, problem_set=problem_set)
    compile_ms = _compile_medians(stored)

    rows: dict[int | None, list[LeaderboardRow]] = defaultdict(list)
    cells: dict[int, dict[int, Cell]] = defaultdict(dict)
    failures: dict[int, dict[int, str]] = defaultdict(dict)
    decomposition: dict[int, dict[int, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for llm_id, per_problem_runs in runs.items():
        per_problem = {pk: _combine_repeats(rs) for pk, rs in per_problem_runs.items()}
        for problem_pk, ss in per_problem.items():
            if chosen := best([s for s in ss if s.eligible], "speedup"):
                cells[problem_pk][llm_id] = Cell(chosen.kernel, chosen.speedup, chosen.memory, chosen.runs, chosen.sol)
            else:
                failures[problem_pk][llm_id] = "hack" if any(s.hack for s in ss) else "incorrect"
            decomposition[llm_id][problems[problem_pk][0]][_decompose(ss)] += 1
        rows[None].append(_llm_row(llms[llm_id], llm_id, None, per_problem, problem_counts[None], compile_ms))
        for level in LEVELS:
            at_level = {pk: ss for pk, ss in per_problem.items() if problems[pk][0] == level}
            if at_level:
                rows[level].append(
                    _llm_row(llms[llm_id], llm_id, level, at_level, problem_counts.get(level, 0), compile_ms)
                )

    for row_level, baseline_rows in _baseline_rows(stored=stored, problem_counts=problem_counts).items():
        rows[row_level].extend(baseline_rows)
    for level_rows in rows.values():
        ranked = sorted((r for r in level_rows if not r.is_baseline), key=_rank_key)
        for i, row in enumerate(ranked, 1):
            row.rank = i
        # Rank order first, so that the (stable) sort by any column keeps the ranking among ties.
        level_rows[:] = ranked + [r for r in level_rows if r.is_baseline]
        level_rows[:] = sort_rows(level_rows, DEFAULT_SORT)

    inactive = list(
        Problem.objects.filter(problem_set=problem_set, active=False, is_latest=True, core=True)
        .order_by("level", "problem_id")
        .values_list("pk", "level", "problem_id", "name", "inactive_reason", "degenerate")
    )
    return LeaderboardData(
        hardware=hardware,
        problem_set=problem_set,
        rows=dict(rows),
        llms=llms,
        problems=problems,
        cells={k: dict(v) for k, v in cells.items()},
        decomposition={k: dict(v) for k, v in decomposition.items()},
        inactive=inactive,
        problem_counts=problem_counts,
        failures={k: dict(v) for k, v in failures.items()},
    )
