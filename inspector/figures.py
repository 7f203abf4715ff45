"""The inspector's figures, read from one result record so that they agree with each other and say where they come
from: the headline speedup traced from the timed calls through any correction the timing checks made, the timed
sides that have per-call times (no row of dashes), and the other timing parts as named values.

Pure functions of the record (evaluator/harness/record.py); nothing here queries the database.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from evaluator.harness.record import Record

# The timed sides a reader compares, in the order they read, with what each one is.
SIDES = (
    ("candidate", "Kernel"),
    ("baseline_tf32", "PyTorch TF32 (the baseline)"),
    ("baseline_fp32", "PyTorch FP32"),
    ("baseline_compile", "torch.compile"),
    ("candidate_fresh_inputs", "Kernel on never-seen inputs"),
)
# Timing checks that may lower the timed figure, and the factor each names in its detail (timing_record.py writes
# "speedup taken from the fresh-input calls (0.254x)" and "speedup taken from the wall clock (0.5x of the timed
# figure)").
CORRECTIONS = {
    "fresh_input_timing": ("calls on never-seen inputs were slower than the timed ones", r"fresh-input calls \("),
    "wallclock_crosscheck": ("the wall clock saw more time than the timed clock", r"wall clock \("),
}
_FACTOR = r"([0-9.]+(?:e[-+]?[0-9]+)?)x"
RELATIVE_TOLERANCE = 1e-3  # a correction below this is rounding, not a correction


@dataclass(frozen=True)
class Correction:
    check: str
    factor: float | None  # None: the record does not say how much of a combined factor this check made
    why: str


@dataclass(frozen=True)
class SpeedupOrigin:
    """Where the headline speedup comes from: `timed` (from the timed calls, as `how` says), then `corrections`
    (timing checks that lowered it), giving `headline`."""

    headline: float
    timed: float
    how: str
    corrections: list[Correction] = field(default_factory=list)
    combined: float = 1.0  # headline / timed


def _timed_figure(record: Record) -> tuple[float, str] | None:
    """The speedup the timed calls gave before any correction: the median of the process pairs' ratios (the ratio
    of the medians with one pair), as the harness computes it (timing.robust_log_ratio)."""
    timing = record.timing
    pairs = [p.speedup for p in (timing.pairs or []) if p.speedup and p.speedup > 0]
    if len(pairs) >= 2:
        figure = math.exp(statistics.median(math.log(s) for s in pairs))
        return figure, (
            f"the median of {len(pairs)} process pairs' ratios (each pair a fresh baseline process and a fresh kernel"
            " process; a pair's ratio is its TF32 median / its kernel median)"
        )
    if len(pairs) == 1:
        base, cand = timing.pairs[0].baseline_tf32_median_ms, timing.pairs[0].candidate_median_ms  # type: ignore[index]
        calls = timing.pairs[0].calls  # type: ignore[index]
        return pairs[0], (
            f"the TF32 baseline's median call time / the kernel's median call time ({_ms(base)} / {_ms(cand)}"
            f"{f', {calls} calls each' if calls else ''}, timed in alternating blocks in one process pair)"
        )
    base, cand = timing.baseline_tf32.median_ms, timing.candidate.median_ms
    if base and cand:
        return base / cand, f"the TF32 baseline's median call time / the kernel's ({_ms(base)} / {_ms(cand)})"
    return None


def _ms(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1000:.3g} \u00b5s" if value < 0.1 else f"{value:.3g} ms"


def speedup_origin(record: Record, headline: float | None) -> SpeedupOrigin | None:
    """The headline speedup (`headline`, the stored figure) traced back to the timed calls."""
    if headline is None or headline <= 0:
        return None
    made = _timed_figure(record)
    if made is None:
        return None
    timed, how = made
    combined = headline / timed
    corrections = []
    if abs(combined - 1) > RELATIVE_TOLERANCE:
        # Only checks whose detail says they took the speedup from another clock (timing_record.py) lowered it.
        said = {
            c.name: c.detail
            for c in record.checks
            if c.passed is False and c.name in CORRECTIONS and "speedup taken from" in (c.detail or "")
        }
        for name, detail in said.items():
            why, before = CORRECTIONS[name]
            found = re.search(before + _FACTOR, detail)
            corrections.append(Correction(name, float(found.group(1)) if found else None, why))
        if len(corrections) == 1:
            corrections = [Correction(corrections[0].check, combined, corrections[0].why)]
        if not corrections:  # a stored figure the record's calls do not explain (an older or edited record)
            corrections = [Correction("", combined, "the stored figure differs from the record's timed calls")]
    return SpeedupOrigin(headline, timed, how, corrections, combined)


# The statistics the timing table has a column for; a side's others are listed in the detail.
TABLE_STATISTICS = ("median_ms", "iqr_ms", "mean_ms", "calls")


@dataclass(frozen=True)
class TimedSide:
    """One row of the timing table: a timed side with its median, and the other statistics its record holds."""

    key: str
    label: str
    median_ms: float
    iqr_ms: float | None
    mean_ms: float | None
    calls: int | None
    others: list[tuple[str, Any]]  # (name, value) of every other statistic (rse, rse_median, rounds, ...)


def timed_sides(record: Record) -> list[TimedSide]:
    """Each side with a median, in SIDES's order: the rows of the timing table."""
    rows = []
    for key, label in SIDES:
        side = getattr(record.timing, key)
        median = getattr(side, "median_ms", None)
        if median is None:
            continue
        stats = side.to_dict()
        others = [(name, value) for name, value in stats.items() if name not in TABLE_STATISTICS]
        rows.append(
            TimedSide(
                key, label, median, getattr(side, "iqr_ms", None), getattr(side, "mean_ms", None), side.calls, others
            )
        )
    return rows


# Words about a part rather than figures of it: a part holding nothing else says nothing (host_fraction on a CPU).
ABOUT_KEYS = {"method", "why"}


def _has_figures(value: object) -> bool:
    if isinstance(value, dict):
        return any(_has_figures(v) for k, v in value.items() if k not in ABOUT_KEYS)
    if isinstance(value, list):
        return any(_has_figures(v) for v in value)
    return value is not None


def timing_parts(record: Record) -> list[tuple[str, dict[str, Any]]]:
    """The other nested parts of the timing record (wall clock, precision, flags, ...) that hold a figure, for the
    detail list."""
    sides = {key for key, _ in SIDES}
    return [
        (key, value)
        for key, value in record.timing.to_dict().items()
        if isinstance(value, dict) and key not in sides and _has_figures(value)
    ]
