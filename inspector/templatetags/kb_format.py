"""Number and link formatting shared by the leaderboard, problem, LLM and inspector templates."""

from __future__ import annotations

import math

from django import template
from django.urls import NoReverseMatch

from inspector.rendering import highlight_python

register = template.Library()
DASH = "\u2014"


def _num(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@register.filter
def times(value: object, digits: int = 2) -> str:
    """1.2345 -> '1.23x'."""
    number = _num(value)
    return DASH if number is None else f"{number:.{digits}f}\u00d7"


@register.filter
def percent(value: object) -> str:
    """42.04 (already a percentage) -> '42.0 %'."""
    number = _num(value)
    return DASH if number is None else f"{number:.1f}\u202f%"


@register.filter
def sci(value: object) -> str:
    """Errors and tolerances: 0.000123 -> '1.23e-04'."""
    number = _num(value)
    return DASH if number is None else f"{number:.2e}"


@register.filter
def ms(value: object) -> str:
    number = _num(value)
    if number is None:
        return DASH
    return f"{number * 1000:.1f}\u202f\u00b5s" if number < 0.1 else f"{number:.3f}\u202fms"


@register.filter
def filesize(value: object) -> str:
    number = _num(value)
    if number is None:
        return DASH
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(number) < 1024 or unit == "GiB":
            return f"{number:.0f}\u202f{unit}" if unit == "B" else f"{number:.1f}\u202f{unit}"
        number /= 1024
    return DASH  # unreachable


@register.filter
def url_or_empty(obj: object) -> str:
    """obj.get_absolute_url(), or '' when its route is not installed (pages still render without it)."""
    try:
        return obj.get_absolute_url()  # type: ignore[attr-defined]
    except (NoReverseMatch, AttributeError):
        return ""


@register.filter
def python_html(source: str, anchor: str = "src") -> str:
    """Highlighted Python with line numbers (anchors `<anchor>-<n>`)."""
    return highlight_python(source or "", anchor=anchor)


@register.filter
def get_item(mapping: object, key: object) -> object:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def label(key: object) -> str:
    """'baseline_peak_bytes' -> 'Baseline peak bytes'."""
    text = str(key).replace("_", " ").strip()
    return text[:1].upper() + text[1:]
