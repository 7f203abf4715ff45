"""Leaderboard rows and metrics (protocol.md section 6), computed from one query over current evaluations.

Ranking policy (said on the page, RANKING_RULE): LLMs are ranked by fast_1 over the whole problem set, as
KernelBench reports it: the share of the set's active problems for which the LLM has a correct kernel faster than
PyTorch TF32; a problem not attempted or not correct counts as not fast. Ties go to more correct problems, then to
the higher geomean speedup. A geomean over correct problems alone would put an LLM with 1 correct problem of 2
above one with 4 of 4. Repeated evaluations of one kernel source (the same LLM, problem and sha256, e.g. uploaded
several times) combine into one sample with the median speedup, correct only if every run was: best-of-N over
re-runs of the same code would rank the luckiest timing.

Eligibility comes only from `leaderboard.selectors.eligibility` (`eligibility_q` annotated as a column), so the
leaderboard, its charts, the API and the CSV export agree with every other ranking in the app. The whole board for
one (hardware, problem set) is computed at once (three queries) and cached under keys that carry a data fingerprint
(see ranking_cache.py), so it goes stale by itself when results change; `leaderboard_cache_clear()` also drops it.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db.models import BooleanField, Case, Exists, OuterRef, QuerySet, Value, When

from catalogue.models import Problem
from evaluator.models import Baseline, DistributionResult, Evaluation
from evaluator.selectors.eligibility import confirmed_hack_exists, eligibility_q
from leaderboard.selectors.ranking_cache import (  # noqa: F401  (leaderboard_cache_clear is this module's API too)
    board_version,
    cache_key,
    cached,
    leaderboard_cache_clear,
)
from leaderboard.untrusted import label as label_param
from leaderboard.untrusted import short_text

LEVELS = (1, 2, 3)
FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
HIDDEN_DISTRIBUTIONS = ("D2", "D3", "D4")
DECOMPOSITION_KEYS = ("tf32_only", "hidden_only", "both", "neither")
BASELINE_ROWS = (
    (Baseline.Precision.TF32, "PyTorch eager (TF32)"),
    (Baseline.Precision.FP32, "PyTorch eager (FP32)"),
    (Baseline.Precision.COMPILE, "torch.compile (TF32)"),
)


def p_label(p: float) -> str:
    """'0', '0.5', '1', '1.5': the key of fast_p in rows, sort keys and exports."""
    return f"{p:g}"


SORT_KEYS = (
    "name",
    "coverage",
    "correctness",
    "speedup",
    *(f"fast_{p_label(p)}" for p in FAST_P),
    "memory",
    "mem_efficient",
    "mem_increased",
    "kernels",
    "standard",
    "inflation",
)
DEFAULT_SORT = "-fast_1"
RANKING_RULE = (
    "Ranked by fast_1 over the whole problem set: the share of all active problems in the set for which the LLM has"
    " a correct kernel faster than PyTorch TF32 (a problem not attempted or incorrect counts as not fast); ties go"
    " to more correct problems, then to the higher geomean speedup."
)
REPEAT_RULE = (
    "A kernel source evaluated more than once (the same code uploaded again) counts once, with the median of its"
    " runs' speedups, and as correct only if every run was; per problem the fastest such kernel counts (best of k"
    " over distinct sources)."
)


# --------------------------------------------------------------------------------------------------------------
# Data shapes
# --------------------------------------------------------------------------------------------------------------
@dataclass
class LeaderboardRow:
    """One line of the board: an LLM or a PyTorch baseline, at one level (None = overall)."""

    kind: str  # "llm" or "baseline"
    name: str
    level: int | None
    llm_id: int | None = None
    baseline: str = ""  # Baseline.Precision value for baseline rows
    attempted: int = 0  # active problems with at least one finished current evaluation
    correct: int = 0  # problems with an eligible kernel
    problems: int = 0  # active problems in the set (at this level): the denominator of fast_p and coverage
    coverage_pct: float | None = None  # attempted / problems
    correctness_pct: float | None = None  # correct / attempted (protocol 6)
    speedup: float | None = None  # geomean vs TF32 over correct problems, fastest correct sample each
    fast_p: dict[str, float | None] = field(default_factory=dict)  # percent of all problems in the set
    memory_efficiency: float | None = None  # geomean memory ratio over correct problems
    mem_efficient_pct: float | None = None
    mem_increased_pct: float | None = None
    kernels: int | None = None
    standard_speedup: float | None = None  # vs FP32, D1-only standard gate, fastest standard-correct sample
    standard_correct: int = 0
    inflation: float | None = None  # standard / verified
    rank: int | None = None

    @property
    def is_baseline(self) -> bool:
        return self.kind == "baseline"

    @property
    def fast_values(self) -> list[float | None]:
        return [self.fast_p.get(p_label(p)) for p in FAST_P]

    def sort_value(self, key: str) -> float | str | None:
        if key == "name":
            return self.name.lower()
        if key.startswith("fast_"):
            return self.fast_p.get(key.removeprefix("fast_"))
        return {
            "coverage": self.coverage_pct,
            "correctness": self.correctness_pct,
            "speedup": self.speedup,
            "memory": self.memory_efficiency,
            "mem_efficient": self.mem_efficient_pct,
            "mem_increased": self.mem_increased_pct,
            "kernels": self.kernels,
            "standard": self.standard_speedup,
            "inflation": self.inflation,
        }[key]

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Cell:
    """The chosen (fastest eligible) kernel of one LLM on one problem."""

    kernel_id: int
    speedup: float | None
    memory_ratio: float | None
    runs: int = 1  # evaluations of this kernel source combined into `speedup` (their median)


@dataclass
class LeaderboardData:
    """Everything the board, its charts and its exports need for one hardware kind and problem set."""

    hardware: str
    problem_set: str
    rows: dict[int | None, list[LeaderboardRow]]  # level (None = overall) -> LLM rows then baseline rows
    llms: dict[int, str]
    problems: dict[int, tuple[int, int, str]]  # problem pk -> (level, problem_id, name), attempted active only
    cells: dict[int, dict[int, Cell]]  # problem pk -> llm id -> chosen eligible kernel
    decomposition: dict[int, dict[int, Counter]]  # llm id -> level -> Counter over DECOMPOSITION_KEYS
    inactive: list[tuple[int, int, int, str, str]] = field(default_factory=list)  # (pk, level, id, name, reason)
    problem_counts: dict[int | None, int] = field(default_factory=dict)  # level (None = all) -> active problems
    failures: dict[int, dict[int, str]] = field(default_factory=dict)  # problem pk -> llm id -> "incorrect"/"hack"


@dataclass
class BoardChoices:
    hardware: list[str]
    problem_sets: list[str]
    default_hardware: str
    default_problem_set: str


# --------------------------------------------------------------------------------------------------------------
# Small maths
# --------------------------------------------------------------------------------------------------------------
def geomean(values: Iterable[float | None]) -> float | None:
    logs = [math.log(v) for v in values if v is not None and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def _best(rows: list[tuple], index: int) -> tuple | None:
    """The row with the largest value at `index` (rows whose value is None lose to any number)."""
    return max(rows, key=lambda r: (r[index] is not None, r[index] or 0.0), default=None)


# --------------------------------------------------------------------------------------------------------------
# Choices and cache
# --------------------------------------------------------------------------------------------------------------
def board_choices(*, version: str | None = None) -> BoardChoices:
    """Hardware kinds and problem sets that have current evaluations, with the defaults the board opens on."""
    return cached(cache_key(version or board_version(), "choices"), _compute_choices)


def _compute_choices() -> BoardChoices:
    pairs = (
        Evaluation.objects.filter(is_current=True)
        .values_list("hardware", "kernel__problem__problem_set")
        .order_by()
        .distinct()
    )
    hardware = sorted({h for h, _ in pairs})
    problem_sets = sorted({s for _, s in pairs})
    default_hw = settings.EVALUATOR_DEFAULT_HARDWARE
    if default_hw not in hardware and hardware:
        default_hw = hardware[0]
    default_set = settings.PROBLEM_SET_DEFAULT
    if default_set not in problem_sets and problem_sets:
        default_set = problem_sets[0]
    return BoardChoices(hardware, problem_sets, default_hw, default_set)


def leaderboard_data(*, hardware: str, problem_set: str, version: str | None = None) -> LeaderboardData:
    """The cached board for one hardware kind and problem set."""
    return cached(
        cache_key(version or board_version(), "data", hardware, problem_set),
        lambda: compute_leaderboard(hardware=hardware, problem_set=problem_set),
    )


def leaderboard_rows(
    *, hardware: str, problem_set: str, level: int | None = None, sort: str = DEFAULT_SORT, version: str | None = None
) -> list[LeaderboardRow]:
    """The rows one board view shows (LLMs and baselines together), sorted server-side."""
    rows = leaderboard_data(hardware=hardware, problem_set=problem_set, version=version).rows.get(level, [])
    return sort_rows(rows, sort)


@dataclass(frozen=True)
class BoardParams:
    hardware: str
    problem_set: str
    level: int | None


def board_params(query: Mapping[str, str], choices: BoardChoices) -> BoardParams:
    """?hardware=&problem_set=&level= with the defaults the board opens on (used by the page and the API alike).
    Malformed values (control characters, non-labels) mean the default, never a header or cache key built from them."""
    level = query.get("level") or ""
    return BoardParams(
        hardware=label_param(query.get("hardware")) or choices.default_hardware,
        problem_set=short_text(query.get("problem_set")) or choices.default_problem_set,
        level=int(level) if level in {str(lv) for lv in LEVELS} else None,
    )


def parse_sort(sort: str | None) -> tuple[str, bool]:
    """'-speedup' -> ('speedup', True). Unknown keys fall back to the default ranking."""
    sort = sort or DEFAULT_SORT
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in SORT_KEYS:
        return DEFAULT_SORT.lstrip("-"), True
    return key, descending


def sort_rows(rows: list[LeaderboardRow], sort: str | None) -> list[LeaderboardRow]:
    key, descending = parse_sort(sort)
    present = [r for r in rows if r.sort_value(key) is not None]
    missing = [r for r in rows if r.sort_value(key) is None]
    # Missing values always go last, whatever the direction; ties keep the verified ranking order.
    present.sort(key=lambda r: r.sort_value(key), reverse=descending)
    return present + missing


# --------------------------------------------------------------------------------------------------------------
# The computation
# --------------------------------------------------------------------------------------------------------------
# Positions in the evaluation tuples below (and in the combined samples built from them).
(
    LLM, NAME, PROBLEM, LEVEL, PID, PNAME, KERNEL, ELIGIBLE, SPEEDUP, SPEEDUP_FP32, MEMORY, STD_OK, D1_OK,
    HIDDEN_FAIL, SHA, HACK, RUNS,
) = range(17)  # fmt: skip


def with_eligibility(qs: QuerySet[Evaluation]) -> QuerySet[Evaluation]:
    """Annotate `is_confirmed_hack` and `eligible` (the one rule of selectors.eligibility, as a column) so a page can
    list every evaluation and still say which ones count."""
    return qs.annotate(is_confirmed_hack=confirmed_hack_exists()).annotate(
        eligible=Case(When(eligibility_q(), then=Value(True)), default=Value(False), output_field=BooleanField())
    )


def _evaluation_tuples(*, hardware: str, problem_set: str) -> list[tuple]:
    """One query: every finished current evaluation on an active problem, with the eligibility verdict as a column."""
    d1_passed = Exists(DistributionResult.objects.filter(evaluation_id=OuterRef("pk"), name="D1", passed=True))
    hidden_failed = Exists(
        DistributionResult.objects.filter(
            evaluation_id=OuterRef("pk"), name__in=HIDDEN_DISTRIBUTIONS, passed=False, skipped=False
        )
    )
    return list(
        with_eligibility(Evaluation.objects.all())
        .filter(
            is_current=True,
            status=Evaluation.Status.DONE,
            hardware=hardware,
            kernel__problem__active=True,
            kernel__problem__problem_set=problem_set,
        )
        .annotate(d1_passed=d1_passed, hidden_failed=hidden_failed)
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
            "kernel__sha256",
            "is_confirmed_hack",
        )
    )


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _combine_repeats(runs: list[tuple]) -> list[tuple]:
    """One sample per kernel source: evaluations of the same code (same sha256) on one problem combine into their
    median speedup (and median FP32 speedup and memory ratio). The combined sample is eligible, standard-correct and
    D1-correct only if every run was, and failed the hidden tests if any run did. Its kernel is the run whose
    speedup is nearest the median."""
    by_source: dict[str, list[tuple]] = defaultdict(list)
    for run in runs:
        by_source[run[SHA] or f"kernel-{run[KERNEL]}"].append(run)
    combined = []
    for group in by_source.values():
        if len(group) == 1:
            combined.append((*group[0], 1))
            continue
        speedup = _median(r[SPEEDUP] for r in group)
        nearest = min(group, key=lambda r: abs((r[SPEEDUP] or 0.0) - (speedup or 0.0)))
        sample = list(nearest)
        sample[ELIGIBLE] = all(r[ELIGIBLE] for r in group)
        sample[SPEEDUP] = speedup
        sample[SPEEDUP_FP32] = _median(r[SPEEDUP_FP32] for r in group)
        sample[MEMORY] = _median(r[MEMORY] for r in group)
        sample[STD_OK] = all(r[STD_OK] for r in group)
        sample[D1_OK] = all(r[D1_OK] for r in group)
        sample[HIDDEN_FAIL] = any(r[HIDDEN_FAIL] for r in group)
        sample[HACK] = any(r[HACK] for r in group)
        combined.append((*sample, len(group)))
    return combined


def _decompose(samples: list[tuple]) -> str:
    """Protocol 6 decomposition for one (LLM, problem), on the sample the standard D1-only gate would pick."""
    d1 = [s for s in samples if s[D1_OK]]
    chosen = _best(d1, SPEEDUP_FP32)
    if chosen is None:
        return "neither"  # fails D1 everywhere: neither refinement changes its verdict
    hidden = bool(chosen[HIDDEN_FAIL])
    fp32, tf32 = chosen[SPEEDUP_FP32], chosen[SPEEDUP]
    tf32_flip = fp32 is not None and tf32 is not None and (fp32 > 1) != (tf32 > 1)
    if hidden and tf32_flip:
        return "both"
    return "hidden_only" if hidden else "tf32_only" if tf32_flip else "neither"


def _llm_row(
    name: str, llm_id: int, level: int | None, per_problem: dict[int, list[tuple]], problems: int
) -> LeaderboardRow:
    """`per_problem` holds combined samples (one per kernel source); `problems` is the set's size at this level."""
    attempted = len(per_problem)
    problems = max(problems, attempted)  # an attempted problem always belongs to the set
    chosen = [c for c in (_best([s for s in ss if s[ELIGIBLE]], SPEEDUP) for ss in per_problem.values()) if c]
    standard = [c for c in (_best([s for s in ss if s[STD_OK]], SPEEDUP_FP32) for ss in per_problem.values()) if c]
    speedups = [c[SPEEDUP] for c in chosen]
    ratios = [c[MEMORY] for c in chosen if c[MEMORY] is not None]
    verified = geomean(speedups)
    std = geomean(c[SPEEDUP_FP32] for c in standard)
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
        kernels=sum(s[RUNS] for ss in per_problem.values() for s in ss),
        standard_speedup=std,
        standard_correct=len(standard),
        inflation=std / verified if std and verified else None,
    )


def _baseline_rows(
    *, hardware: str, problem_set: str, problem_counts: Mapping[int | None, int]
) -> dict[int | None, list[LeaderboardRow]]:
    """Reference rows: TF32 eager is 1.0x by definition; FP32 eager and torch.compile are expressed on the same
    scale (TF32 time / their time) so they read like any kernel's speedup. Latest measurement per setting wins.
    Their fast_p is over the problems measured (coverage shows how many of the set that is)."""
    latest: dict[tuple[int, str], tuple] = {}
    level_of: dict[int, int] = {}
    for problem_pk, level, precision, median_ms, peak in (
        Baseline.objects.filter(hardware=hardware, problem__active=True, problem__problem_set=problem_set)
        .order_by("measured_at")
        .values_list("problem_id", "problem__level", "precision", "median_ms", "peak_memory_bytes")
    ):
        latest[(problem_pk, precision)] = (median_ms, peak)
        level_of[problem_pk] = level
    out: dict[int | None, list[LeaderboardRow]] = defaultdict(list)
    for precision, label in BASELINE_ROWS:
        per_problem: dict[int, tuple[float, float | None]] = {}
        for (problem_pk, prec), (median_ms, peak) in latest.items():
            tf32 = latest.get((problem_pk, Baseline.Precision.TF32))
            if prec != precision or tf32 is None:
                continue
            ratio = tf32[1] / peak if tf32[1] and peak else None
            per_problem[problem_pk] = (tf32[0] / median_ms, ratio)
        if not per_problem:
            continue
        for level in (None, *LEVELS):
            values = [v for pk, v in per_problem.items() if level is None or level_of[pk] == level]
            if not values:
                continue
            speedups = [s for s, _ in values]
            ratios = [r for _, r in values if r is not None]
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


def compute_leaderboard(*, hardware: str, problem_set: str) -> LeaderboardData:
    """Compute the whole board (every level and overall) without the cache. Four queries in all."""
    runs: dict[int, dict[int, list[tuple]]] = defaultdict(lambda: defaultdict(list))  # llm -> problem -> rows
    llms: dict[int, str] = {}
    problems: dict[int, tuple[int, int, str]] = {}
    for t in _evaluation_tuples(hardware=hardware, problem_set=problem_set):
        runs[t[LLM]][t[PROBLEM]].append(t)
        llms[t[LLM]] = t[NAME]
        problems[t[PROBLEM]] = (t[LEVEL], t[PID], t[PNAME])
    problem_counts = _problem_counts(problem_set, ((lv, pid) for lv, pid, _ in problems.values()))

    rows: dict[int | None, list[LeaderboardRow]] = defaultdict(list)
    cells: dict[int, dict[int, Cell]] = defaultdict(dict)
    failures: dict[int, dict[int, str]] = defaultdict(dict)
    decomposition: dict[int, dict[int, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for llm_id, per_problem_runs in runs.items():
        per_problem = {pk: _combine_repeats(rs) for pk, rs in per_problem_runs.items()}
        for problem_pk, ss in per_problem.items():
            if chosen := _best([s for s in ss if s[ELIGIBLE]], SPEEDUP):
                cells[problem_pk][llm_id] = Cell(chosen[KERNEL], chosen[SPEEDUP], chosen[MEMORY], chosen[RUNS])
            else:
                failures[problem_pk][llm_id] = "hack" if any(s[HACK] for s in ss) else "incorrect"
            decomposition[llm_id][problems[problem_pk][0]][_decompose(ss)] += 1
        rows[None].append(_llm_row(llms[llm_id], llm_id, None, per_problem, problem_counts[None]))
        for level in LEVELS:
            at_level = {pk: ss for pk, ss in per_problem.items() if problems[pk][0] == level}
            if at_level:
                rows[level].append(_llm_row(llms[llm_id], llm_id, level, at_level, problem_counts.get(level, 0)))

    for level, baseline_rows in _baseline_rows(
        hardware=hardware, problem_set=problem_set, problem_counts=problem_counts
    ).items():
        rows[level].extend(baseline_rows)
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
        .values_list("pk", "level", "problem_id", "name", "inactive_reason")
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


def level_tabs(data: LeaderboardData) -> list[tuple[str, str]]:
    """('', 'Overall') and one tab per level that has problems in the set (a level with none gets no tab)."""
    return [("", "Overall"), *((str(lv), f"Level {lv}") for lv in LEVELS if data.problem_counts.get(lv))]


def llm_level_rows(data: LeaderboardData, llm_id: int) -> list[LeaderboardRow]:
    """One LLM's rows (overall first, then per level) out of a computed board."""
    return [
        r for level in (None, *LEVELS) for r in data.rows.get(level, []) if r.llm_id == llm_id and not r.is_baseline
    ]
