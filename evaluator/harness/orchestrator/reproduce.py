"""Compare a verdict with its reproduction: the same per-distribution pass/fail and error figures, or which differ
and by how much (used by `manage.py reproduce` and `python -m evaluator.harness ... --compare RECORD.json`).

Both records are plain dicts in the shape of record.py. stdlib only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# Per distribution: what the gate decided, then how far each was from the tolerance.
DISTRIBUTION_FIGURES = (
    "passed",
    "skipped",
    "trials",
    "max_abs_error",
    "max_rel_error",
    "worst_ratio",
    "beyond_tolerance",
)
VERDICT_FIGURES = ("status", "correct", "standard_correct", "reference_constant", "params_randomised")
# The software and hardware a verdict was measured on: a difference here explains differing figures.
ENVIRONMENT_KEYS = ("device", "device_name", "arch", "torch", "cuda", "cudnn", "driver", "python", "harness_version")
# Timing is measured afresh by a reproduction; it is shown, never expected to agree to the digit.
TIMING_FIGURES = ("speedup", "speedup_fp32", "memory_ratio")


@dataclass(frozen=True, slots=True)
class Difference:
    """One figure that is not the same in the reproduction."""

    figure: str
    before: Any
    after: Any

    @property
    def delta(self) -> float | None:
        if _number(self.before) and _number(self.after):
            return float(self.after) - float(self.before)
        return None

    @property
    def relative(self) -> float | None:
        delta = self.delta
        if delta is None or not self.before:
            return None
        return delta / abs(float(self.before))

    def line(self) -> str:
        text = f"{self.figure}: {self.before!r} -> {self.after!r}"
        if self.delta is not None:
            text += f" (delta {self.delta:+.3g}"
            text += f", {self.relative:+.2%})" if self.relative is not None else ")"
        return text


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def figures(record: dict[str, Any]) -> dict[str, Any]:
    """The verdict's figures that a reproduction with the same seeds must give again, by name."""
    out = {name: record.get(name) for name in VERDICT_FIGURES}
    for dist in record.get("distributions") or []:
        for name in DISTRIBUTION_FIGURES:
            out[f"{dist.get('name')}.{name}"] = dist.get(name)
    return out


def differences(original: dict[str, Any], again: dict[str, Any]) -> list[Difference]:
    """Figures (per distribution and of the verdict) that differ between `original` and its reproduction."""
    before, after = figures(original), figures(again)
    return [
        Difference(name, before.get(name), after.get(name))
        for name in sorted(set(before) | set(after), key=_order)
        if before.get(name) != after.get(name)
    ]


def environment_differences(original: dict[str, Any], again: dict[str, Any]) -> list[Difference]:
    """Where the two were measured differently (a key the reproduction did not record, e.g. the driver outside the
    site, is not a difference)."""
    a, b = original.get("environment") or {}, again.get("environment") or {}
    differ = [k for k in ENVIRONMENT_KEYS if b.get(k) is not None and a.get(k) != b.get(k)]
    return [Difference(k, a.get(k), b.get(k)) for k in differ]


def _order(name: str) -> tuple[int, str]:
    return (0 if "." not in name else 1, name)


def table(record: dict[str, Any]) -> list[str]:
    """One line per distribution: pass/fail and the error figures."""
    lines = []
    for d in record.get("distributions") or []:
        state = "skipped" if d.get("skipped") else ("pass" if d.get("passed") else "FAIL")
        lines.append(
            f"  {d.get('name')}: {state:7} trials={d.get('trials')} max_abs={d.get('max_abs_error')} "
            f"max_rel={d.get('max_rel_error')} worst_ratio={d.get('worst_ratio')} "
            f"beyond={d.get('beyond_tolerance')}"
        )
    return lines


def report(original: dict[str, Any], again: dict[str, Any]) -> str:
    """What a reader needs: both verdicts' per-distribution figures, then what differs and by how much."""
    env = again.get("environment") or {}
    lines = [f"reproduction on {env.get('device_name') or env.get('device')} (torch {env.get('torch')}):"]
    lines += [f"  status={again.get('status')} correct={again.get('correct')}"] + table(again)
    lines += ["recorded verdict:", f"  status={original.get('status')} correct={original.get('correct')}"]
    lines += table(original)
    diffs = differences(original, again)
    envs = environment_differences(original, again)
    if diffs:
        lines.append(f"{len(diffs)} figure(s) differ:")
        lines += [f"  {d.line()}" for d in diffs]
    else:
        lines.append("identical: every per-distribution pass/fail and error figure is the same")
    if envs:
        lines.append("measured on different software or hardware:")
        lines += [f"  {d.line()}" for d in envs]
    timing = [Difference(k, original.get(k), again.get(k)) for k in TIMING_FIGURES if original.get(k) != again.get(k)]
    if timing:
        lines.append("timing (measured afresh, not expected to agree to the digit):")
        lines += [f"  {d.line()}" for d in timing]
    return "\n".join(lines)
