"""The inspector's own formatting: a result-record value read by its key (bytes as KiB/MiB/GiB, times in ms or µs),
how far a distribution was from passing in words, and a correction factor."""

from __future__ import annotations

import re
from typing import Any

from django import template

from leaderboard.templatetags.kb_format import DASH, TIMES, filesize, ms, readable, sci, significant

register = template.Library()


@register.filter
def record_value(value: object, key: object = "") -> str:
    """A record value as a reader wants it, by its key's unit: `*_bytes` as '8.0 GiB' (not 8589934592), `*_ms` as a
    time; anything else as `readable` (dicts as 'key: value; ...', with the same rule for their keys)."""
    name = str(key)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {record_value(v, k)}" for k, v in value.items()) or DASH
    if isinstance(value, int | float) and not isinstance(value, bool):
        if name.endswith("_bytes"):
            return filesize(value)
        if name.endswith("_ms") or name.endswith("_ms_per_call") or name.endswith("_ms_per_block"):
            return ms(value)
    return readable(value)


@register.filter
def how_far(d: Any) -> str:
    """A distribution's distance from passing: its worst element's error as a share of the allowance
    (|out - ref| <= atol + rtol*|ref|), in words that fit the case: exact, within (as a percentage), or beyond (as a
    multiple, with the count of elements beyond). '' for a record without the figures."""
    ratio = getattr(d, "worst_ratio", None)
    if ratio is None:
        return ""
    tol = f"atol = rtol = {sci(getattr(d, 'atol', None))}"
    beyond, elements = getattr(d, "beyond_tolerance", None), getattr(d, "elements", None)
    if ratio == 0:
        return f"exact: every element equals the reference ({tol})"
    if ratio <= 1:
        share = 100 * ratio
        text = "under 0.1" if share < 0.1 else significant(share, 2)
        return f"within tolerance: the worst element uses {text}\u202f% of its allowance ({tol})"
    count = f"; {beyond} of {elements} elements beyond" if beyond is not None and elements is not None else ""
    return f"worst element {significant(ratio)}{TIMES} its allowance{count} ({tol})"


@register.filter
def factor(value: object) -> str:
    """A multiplier applied to a figure: 0.254 -> '×0.254'."""
    try:
        return f"{TIMES}{significant(float(value))}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DASH


_FRESH_FACTOR = re.compile(r"speedup taken from the fresh-input calls \(([0-9.]+(?:e[-+]?[0-9]+)?)x\)")


@register.filter
def check_detail(text: object) -> str:
    """A check's detail with the factor a correction applied said as one ('the timed figure ×0.254'), where the
    harness writes it like a speedup ('(0.254x)')."""
    return _FRESH_FACTOR.sub(
        lambda m: f"speedup taken from the fresh-input calls (the timed figure {factor(m.group(1))})", str(text or "")
    )
