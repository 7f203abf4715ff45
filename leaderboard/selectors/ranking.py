"""Leaderboard rows and metrics (docs/protocol.md section 6): the cached board, its choices and its rows.

Ranking policy (said on the page, RANKING_RULE): LLMs are ranked by fast_1 over the whole problem set, as
KernelBench reports it: the share of the set's active problems for which the LLM has a correct kernel faster than
PyTorch TF32; a problem not attempted or not correct counts as not fast. Ties go to more correct problems, then to
the higher geomean speedup. A geomean over correct problems alone would put an LLM with 1 correct problem of 2
above one with 4 of 4. Repeated evaluations of one kernel source (the same LLM, problem and sha256, e.g. uploaded
several times) combine into one sample with the median speedup, correct only if every run was: best-of-N over
re-runs of the same code would rank the luckiest timing.

Eligibility comes only from `evaluator.selectors.eligibility` (`eligibility_q` annotated as a column), so the
leaderboard, its charts, the API and the CSV export agree with every other ranking in the app. The whole board for
one (hardware, problem set) is computed at once (three queries) and cached under keys that carry a data fingerprint
(see ranking_cache.py), so it goes stale by itself when results change; `leaderboard_cache_clear()` also drops it.

The computation is ranking_compute.py, the shapes and constants ranking_shapes.py; both are re-exported here.
"""

from __future__ import annotations

import hashlib

from django.conf import settings

from evaluator.models import Evaluation
from evaluator.selectors.stacks import BoardMeasured, board_measured
from leaderboard.selectors.problem_sets import problem_set_default_among
from leaderboard.selectors.ranking_cache import (  # noqa: F401  (leaderboard_cache_clear is this module's API too)
    board_version,
    cache_key,
    cached,
    leaderboard_cache_clear,
)
from leaderboard.selectors.ranking_compute import compute_leaderboard, with_eligibility  # noqa: F401
from leaderboard.selectors.ranking_shapes import (  # noqa: F401  (the board's vocabulary, imported from here)
    DECOMPOSITION_KEYS,
    DEFAULT_SORT,
    FAST_P,
    LEVELS,
    RANKING_RULE,
    REPEAT_RULE,
    SORT_KEYS,
    BoardChoices,
    Cell,
    LeaderboardData,
    LeaderboardRow,
    geomean,
    p_label,
    parse_sort,
    pct,
    sort_rows,
)


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
    # Per hardware, the default set among those it has results for: a CPU demo beside loaded GPU results
    # (load_gpu_results, kernelbench-main on h200) opens on the demo, not on an empty (cpu, kernelbench-main) board,
    # and ?hardware=h200 on kernelbench-main.
    # The choice is the upload default's (problem_set_default: the set with problems for that hardware), so a
    # results fixture for a GPU never moves a CPU board, whichever set was loaded last.
    default_sets = {
        hw: problem_set_default_among(hardware=hw, sets=sorted({s for h, s in pairs if h == hw})) for hw in hardware
    }
    default_set = default_sets.get(default_hw) or problem_set_default_among(hardware=default_hw, sets=problem_sets)
    return BoardChoices(hardware, problem_sets, default_hw, default_set, default_sets)


def leaderboard_data(
    *, hardware: str, problem_set: str, version: str | None = None, stack: str = ""
) -> LeaderboardData:
    """The cached board for one hardware kind and problem set (and software stack, when one is named)."""
    stack_part = hashlib.sha256(stack.encode()).hexdigest()[:16] if stack else ""
    return cached(
        cache_key(version or board_version(), "data", hardware, problem_set, *([stack_part] if stack else [])),
        lambda: compute_leaderboard(hardware=hardware, problem_set=problem_set, stack=stack),
    )


def board_measured_cached(
    *, hardware: str, problem_set: str, stack: str = "", version: str | None = None
) -> BoardMeasured:
    """When the board's numbers were measured and on which software stacks (cached with the board)."""
    stack_part = hashlib.sha256(stack.encode()).hexdigest()[:16] if stack else ""
    return cached(
        cache_key(version or board_version(), "measured", hardware, problem_set, stack_part),
        lambda: board_measured(hardware=hardware, problem_set=problem_set, stack=stack),
    )


def leaderboard_rows(
    *,
    hardware: str,
    problem_set: str,
    level: int | None = None,
    sort: str = DEFAULT_SORT,
    version: str | None = None,
    stack: str = "",
) -> list[LeaderboardRow]:
    """The rows one board view shows (LLMs and baselines together), sorted server-side; only verdicts measured on
    the software `stack` (evaluator.selectors.stacks) when one is named."""
    data = leaderboard_data(hardware=hardware, problem_set=problem_set, version=version, stack=stack)
    rows = data.rows.get(level, [])
    return sort_rows(rows, sort)


def level_tabs(data: LeaderboardData) -> list[tuple[str, str]]:
    """('', 'Overall') and one tab per level that has problems in the set (a level with none gets no tab)."""
    return [("", "Overall"), *((str(lv), f"Level {lv}") for lv in LEVELS if data.problem_counts.get(lv))]


def llm_level_rows(data: LeaderboardData, llm_id: int) -> list[LeaderboardRow]:
    """One LLM's rows (overall first, then per level) out of a computed board."""
    return [
        r for level in (None, *LEVELS) for r in data.rows.get(level, []) if r.llm_id == llm_id and not r.is_baseline
    ]
