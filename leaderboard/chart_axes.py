"""Log axes that read right: a range around the values and tick labels that each read as the number they mark.

Plotly labels the minor ticks of a log axis spanning about a decade or more with their first digit only, so a
speedup axis from 0.2 to 1 read "2 3 4 5 6 7 8 9 1". Here the ticks are chosen (1, 2 and 5 times each power of ten,
denser or sparser to suit the range) and labelled in full ("0.2", "0.5", "1", "2"; "20 %" on a fraction axis).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

MAX_TICKS = 8
MIN_TICKS = 2  # fewer chosen ticks (a range narrower than 1.2 to 1.5): Plotly's own, labelled in full
# Mantissas within one decade, densest first; the axis takes the densest set giving at most MAX_TICKS ticks.
MANTISSAS: tuple[tuple[float, ...], ...] = (
    (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0),
    (1.0, 2.0, 3.0, 5.0),
    (1.0, 2.0, 5.0),
    (1.0, 3.0),
    (1.0,),
)


def log_range(values: Iterable[float | None], *, pad: float, include_one: bool = True) -> list[float] | None:
    """The axis range in decades (log10) around the positive `values` (and 1, where the reference line is), padded
    by `pad` decades on each side so points and their labels sit inside; None without a positive value."""
    logs = [math.log10(v) for v in values if v and v > 0]
    if not logs:
        return None
    if include_one:
        logs.append(0.0)
    return [min(logs) - pad, max(logs) + pad]


def _ticks_in(low: float, high: float, mantissas: Sequence[float], decade_step: int = 1) -> list[float]:
    ticks = []
    for decade in range(math.floor(low) - 1, math.ceil(high) + 1):
        if decade % decade_step:
            continue
        for m in mantissas:
            value = m * 10.0**decade
            if low - 1e-9 <= math.log10(value) <= high + 1e-9:
                ticks.append(float(f"{value:.6g}"))  # 0.30000000000000004 -> 0.3
    return ticks


def log_ticks(decades: Sequence[float]) -> list[float]:
    """Tick values for a log axis whose range is `decades` (log10 of its ends): the densest 1-2-5 style set with at
    most MAX_TICKS ticks, or every k-th power of ten on a very wide axis."""
    low, high = min(decades), max(decades)
    for mantissas in MANTISSAS:
        ticks = _ticks_in(low, high, mantissas)
        if len(ticks) <= MAX_TICKS:
            return ticks
    return _ticks_in(low, high, (1.0,), decade_step=math.ceil((high - low) / (MAX_TICKS - 1)))


def tick_label(value: float, *, percent: bool = False) -> str:
    """0.2 -> '0.2', 1.0 -> '1', 2000.0 -> '2000', 1e-5 -> '1e-05'; with percent, 0.2 -> '20 %'."""
    if percent:
        return f"{tick_label(value * 100)}\u202f%"
    return f"{value:.6g}"


def log_axis(values: Iterable[float | None], *, pad: float, percent: bool = False) -> dict[str, Any]:
    """Layout settings for a log axis over `values`: its range, its ticks and their labels (update_xaxes(**this));
    only `type` when no value is positive (an empty axis keeps Plotly's defaults)."""
    decades = log_range(values, pad=pad)
    if decades is None:
        return {"type": "log"}
    ticks = log_ticks(decades)
    if len(ticks) < MIN_TICKS:  # a format makes Plotly label every tick in full, not by its first digit
        return {"type": "log", "range": decades, "tickformat": ".1~%" if percent else ".3~g"}
    return {
        "type": "log",
        "range": decades,
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [tick_label(t, percent=percent) for t in ticks],
    }
