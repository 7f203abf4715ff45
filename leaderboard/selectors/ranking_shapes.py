"""The board's vocabulary: levels, fast_p thresholds, sort keys, the ranking rule as said on the page, the rows
and data a computed board holds, and the small maths and sorting used on them. No queries."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TypeVar

from evaluator.models import Baseline

T = TypeVar("T")

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
    "sol",
    "compile",
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
    evaluations: int | None = None  # baseline rows: evaluations aggregated into their per-problem medians, summed
    # Speed of light: geomean over correct problems of the speed-of-light fraction (roofline bound / kernel time; GPUs
    # with known peaks only), and of stored torch.compile time / kernel time (the stored sweep, not paired)
    sol_fraction: float | None = None
    vs_compile: float | None = None

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
            "sol": self.sol_fraction,
            "compile": self.vs_compile,
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
    sol: float | None = None  # its speed-of-light fraction (None on the CPU or a GPU of unknown peaks)


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
    # (pk, level, id, name, reason, degenerate status of catalogue.Problem.Degenerate)
    inactive: list[tuple[int, int, int, str, str, str]] = field(default_factory=list)
    problem_counts: dict[int | None, int] = field(default_factory=dict)  # level (None = all) -> active problems
    failures: dict[int, dict[int, str]] = field(default_factory=dict)  # problem pk -> llm id -> "incorrect"/"hack"


@dataclass
class BoardChoices:
    hardware: list[str]
    problem_sets: list[str]
    default_hardware: str
    default_problem_set: str
    default_sets: dict[str, str] = field(default_factory=dict)  # hardware -> the set it opens on

    def default_set_for(self, hardware: str) -> str:
        """The set a board for `hardware` opens on: one that hardware has results for (PROBLEM_SET_DEFAULT if so)."""
        return self.default_sets.get(hardware, self.default_problem_set)


# --------------------------------------------------------------------------------------------------------------
# Small maths
# --------------------------------------------------------------------------------------------------------------
def geomean(values: Iterable[float | None]) -> float | None:
    logs = [math.log(v) for v in values if v is not None and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def best(samples: list[T], field: str) -> T | None:
    """The sample with the largest `field` (samples whose value is None lose to any number)."""
    return max(samples, key=lambda s: (getattr(s, field) is not None, getattr(s, field) or 0.0), default=None)


# --------------------------------------------------------------------------------------------------------------
# Sorting
# --------------------------------------------------------------------------------------------------------------
def parse_sort(sort: str | None) -> tuple[str, bool]:
    """'-speedup' -> ('speedup', True). Unknown keys fall back to the default ranking."""
    sort = sort or DEFAULT_SORT
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in SORT_KEYS:
        return DEFAULT_SORT.lstrip("-"), True
    return key, descending


def sort_rows(rows: list[LeaderboardRow], sort: str | None) -> list[LeaderboardRow]:
    """The LLM rows sorted by `sort`, then the baseline rows in their own fixed order (TF32, FP32, torch.compile):
    PyTorch itself is a reference under the ranked LLMs on every page, width and sort, never ranked among them."""
    key, descending = parse_sort(sort)
    llms = [r for r in rows if not r.is_baseline]
    present = [r for r in llms if r.sort_value(key) is not None]
    missing = [r for r in llms if r.sort_value(key) is None]
    # Missing values always go last, whatever the direction; ties keep the verified ranking order.
    present.sort(key=lambda r: r.sort_value(key), reverse=descending)  # type: ignore[arg-type,return-value]
    return present + missing + [r for r in rows if r.is_baseline]
