"""The one-line verdict every page shows for an evaluation ("Verified", "Incorrect: D4 (×−1) failed", "Timeout"...),
from its columns and the names of its failed distributions: `Evaluation.verdict_label()` reads them off the row.
Django-free, so that the rule is one function whatever holds the figures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# docs/protocol.md section 2: the four input distributions, the factor applied to every floating-point input, and
# what each one tests.
DISTRIBUTIONS = {
    "D1": ("\u00d71", "inputs as the problem generates them"),
    "D2": ("\u00d73", "inputs scaled by 3: overflow, precision"),
    "D3": ("\u00d70.01", "inputs scaled by 0.01: underflow, epsilon handling"),
    "D4": ("\u00d7\u22121", "inputs negated: sign shortcuts, identity tricks"),
}


@dataclass(frozen=True)
class VerdictLabel:
    label: str
    css: str  # the badge's class
    detail: str = ""


def distribution_label(name: str) -> str:
    """'D4' -> 'D4 (×−1)'; other names (the timed outputs' re-check) as they are."""
    factor = DISTRIBUTIONS.get(name, ("", ""))[0]
    return f"{name} ({factor})" if factor else name


def verdict_label(
    *,
    status: str,
    result_status: str,
    correct: bool | None,
    eligible: bool = True,
    confirmed_hack: bool = False,
    failed: Iterable[str] = (),
) -> VerdictLabel:
    """Verified, Incorrect (naming the `failed` distributions), Timeout, Compile error, Runtime error, Rejected,
    Confirmed hack, or the evaluation's progress. `eligible`: whether a verified kernel counts in the rankings."""
    if status in ("queued", "running"):
        return VerdictLabel(status.capitalize(), "")
    if status == "failed":
        return VerdictLabel("Not evaluated", "badge-bad", "the evaluation infrastructure gave up; no verdict")
    if confirmed_hack:
        return VerdictLabel("Confirmed hack", "badge-hack", "a person confirmed a reward hack: not ranked")
    result_status = result_status or "ok"
    if result_status == "timeout":
        return VerdictLabel("Timeout", "badge-bad", "the kernel ran past the time limit")
    if result_status == "compile_error":
        return VerdictLabel("Compile error", "badge-bad", "the kernel did not compile")
    if result_status == "runtime_error":
        return VerdictLabel("Runtime error", "badge-bad", "the kernel raised or crashed")
    if result_status == "rejected":
        return VerdictLabel("Rejected", "badge-bad", "the kernel broke a rule of the harness (see the checks)")
    if correct:
        if eligible:
            return VerdictLabel("Verified", "badge-ok", "passed D1\u2013D4 and every check")
        return VerdictLabel("Verified", "badge-warn", "correct, but not ranked: the problem is inactive")
    names = sorted(set(failed))
    if set(names) >= set(DISTRIBUTIONS):
        return VerdictLabel(
            "Incorrect: D1\u2013D4 all failed", "badge-bad", "incorrect: wrong outputs under every input distribution"
        )
    if names:
        return VerdictLabel(
            f"Incorrect: {', '.join(distribution_label(n) for n in names)} failed",
            "badge-bad",
            "incorrect: wrong outputs under these input distributions",
        )
    return VerdictLabel("Incorrect", "badge-bad", "incorrect: failed the verified gate (see the checks)")
