"""Number, distribution and link formatting shared by the leaderboard, problem, LLM and inspector templates (the
verdict itself is the evaluation's: `Evaluation.verdict_label()`).

Speedups and ratios read in three significant figures with one multiplication sign (0.00123x reads "0.00123×",
not "0.00×"); a speedup whose 95 % interval spans more than a factor of two is marked noisy, and CPU timings say so.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django import template
from django.urls import NoReverseMatch
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe

from evaluator.hardware import is_cpu
from evaluator.values import finite_number
from evaluator.verdict_label import DISTRIBUTIONS, distribution_label
from leaderboard.highlight import highlight_python

register = template.Library()
DASH = "\u2014"
TIMES = "\u00d7"
NOISY_SPAN = 2.0  # hi / lo of the 95 % interval above which a speedup is marked noisy


def _num(value: Any) -> float | None:
    """Template values may be text or Decimal: read them as a float, then the one finiteness rule."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return finite_number(float(value))
    except (TypeError, ValueError):
        return None


def significant(number: float, digits: int = 3) -> str:
    """3 significant figures without switching to exponents: 0.00123 -> '0.00123', 121.8 -> '122', 1 -> '1.00'."""
    if number == 0:
        return "0"
    exponent = math.floor(math.log10(abs(number)))
    decimals = max(0, digits - 1 - exponent)
    text = f"{number:.{decimals}f}"
    if decimals and abs(float(text)) >= 10 ** (exponent + 1):  # 9.996 rounded up to 10.00: one digit too many
        text = f"{number:.{decimals - 1}f}"
    return text


@register.filter
def times(value: object) -> str:
    """1.2345 -> '1.23×', 0.00123 -> '0.00123×', 121.8 -> '122×'."""
    number = _num(value)
    return DASH if number is None else f"{significant(number)}{TIMES}"


@register.filter
def percent(value: object) -> str:
    """42.04 (already a percentage) -> '42.0 %'."""
    number = _num(value)
    return DASH if number is None else f"{number:.1f}\u202f%"


@register.filter
def percent_of_one(value: object) -> str:
    """A fraction: 0.4212 -> '42.1 %' (speed of light, a kernel's share of device time)."""
    number = _num(value)
    return DASH if number is None else f"{100 * number:.1f}\u202f%"


@register.filter
def intcomma_plain(value: object) -> str:
    """1234567 -> '1,234,567' (FLOP counts)."""
    number = _num(value)
    return DASH if number is None else f"{int(number):,}"


@register.filter
def sci(value: object) -> str:
    """Errors and tolerances: 0.000123 -> '1.23e-04'."""
    number = _num(value)
    return DASH if number is None else f"{number:.2e}"


@register.filter
def ms(value: object, like: object = None) -> str:
    """A time in milliseconds, in µs below 0.1 ms. `like`: another time whose unit this one takes, so the figures of
    one quantity (a side's median, IQR and mean) read in one unit: `{{ mean|ms:median }}`."""
    number = _num(value)
    if number is None:
        return DASH
    reference = _num(like) if like is not None else None
    unit_of = number if reference is None else reference
    return f"{significant(number * 1000)}\u202f\u00b5s" if unit_of < 0.1 else f"{significant(number)}\u202fms"


@register.filter
def rel_error(d: object) -> str:
    """A distribution's max relative error, never a misleading 0: the relative error skips elements whose reference
    is 0, so a non-zero absolute error with a 0 relative one means every differing element had reference 0."""
    rel, abs_ = _num(_attr(d, "max_rel_error")), _num(_attr(d, "max_abs_error"))
    if rel is None:
        return DASH
    if rel == 0 and abs_:
        return "n/a (reference 0 where it differs)"
    return sci(rel)


_E_NOTATION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?e[+-]?\d+)(?=\s?[x\u00d7])")


@register.filter
def plain_numbers(text: object) -> str:
    """Ratios in a harness message ('1e+03x its allowance') in the page's one form for them ('1000x')."""
    return _E_NOTATION.sub(lambda m: significant(float(m.group(1))), str(text or ""))


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


def is_noisy(low: object, high: object) -> bool:
    lo, hi = _num(low), _num(high)
    return lo is not None and hi is not None and lo > 0 and hi / lo > NOISY_SPAN


@register.simple_tag
def speedup(
    value: object, low: object = None, high: object = None, *, hardware: object = "", counted: bool = True
) -> str:
    """One speedup as every page shows it: bold only when it counts, its 95 % CI, a 'noisy' mark when the
    interval spans more than 2x, and a 'CPU' mark for CPU timings."""
    number = _num(value)
    if number is None:
        return DASH
    if counted:
        html = format_html('<strong class="speedup">{}</strong>', times(number))
    else:
        html = format_html(
            '<span class="speedup not-counted" title="not counted: the kernel is not correct">{}</span>', times(number)
        )
    if _num(low) is not None and _num(high) is not None:
        html += format_html(' <span class="ci muted">(CI {}\u2013{})</span>', times(low), times(high))
    if is_noisy(low, high):
        html += format_html(
            ' <span class="badge badge-warn noisy" title="{}">noisy</span>',
            f"the 95 % interval spans more than {significant(NOISY_SPAN)}{TIMES}: a re-run may differ a lot",
        )
    if is_cpu(hardware):
        html += mark_safe(  # a constant
            ' <span class="badge badge-cpu" title="measured on a CPU (demo or test machine): noisy, not a GPU'
            ' speedup">CPU</span>'
        )
    return html


def _attr(obj: object, name: str, default: object = None) -> Any:
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


@register.filter
def dist_label(name: object) -> str:
    return distribution_label(str(name))


@register.filter
def dist_help(name: object) -> str:
    return DISTRIBUTIONS.get(str(name), ("", ""))[1]


@register.filter
def readable(value: object) -> str:
    """A result-record value as text: None -> '—', True -> 'yes', dicts as 'key: value; ...', lists joined."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):  # the page's one form for a number: no exponent unless it is huge or tiny
        text = f"{value:.4g}"
        if "e" in text and 1e-4 <= abs(value) < 1e9:  # 1234567.0 -> '1.235e+06' -> '1234567'
            text = significant(value, 4)
            text = text.rstrip("0").rstrip(".") if "." in text else text
        return text
    if isinstance(value, dict):
        return "; ".join(f"{k}: {readable(v)}" for k, v in value.items()) or DASH
    if isinstance(value, list | tuple):
        return ", ".join(readable(v) for v in value) or DASH
    return str(value)


@register.filter
def url_or_empty(obj: object) -> str:
    """obj.get_absolute_url(), or '' when its route is not installed (pages still render without it)."""
    try:
        return obj.get_absolute_url()  # type: ignore[attr-defined]
    except (NoReverseMatch, AttributeError):
        return ""


_SOFT_BREAK = re.compile(r"(?<=\w)([._/])(?=\w)")


@register.filter
def soft_breaks(text: object) -> str:
    """Escaped text with a line-break opportunity (<wbr>) after each dot, underscore or slash inside a word, so a
    header such as "vs torch.compile" may wrap after "torch." instead of widening its column."""
    return mark_safe(_SOFT_BREAK.sub(r"\1<wbr>", str(escape(text))))  # escaped first; only <wbr> is added


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


@register.filter
def cpu_hardware(hardware: object) -> bool:
    return is_cpu(hardware)


@register.filter
def is_mapping(value: object) -> bool:
    return isinstance(value, dict) and bool(value)


@register.filter
def fast_p_label(index: object) -> str:
    """The board's i-th fast_p threshold as shown in a label: 0 -> '0', 3 -> '1', 4 -> '1.5'."""
    from leaderboard.selectors.ranking_shapes import FAST_P, p_label

    try:
        return p_label(FAST_P[int(index)])  # type: ignore[call-overload]
    except (TypeError, ValueError, IndexError):
        return ""
