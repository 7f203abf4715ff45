"""Compare a verdict with its reproduction, and with what was published about it: the same per-distribution
pass/fail and error figures, or which differ, by how much and why (used by `manage.py reproduce` and
`python -m evaluator.harness ... --compare RECORD.json`).

Three things can disagree, and each difference names its cause:

- what readers were shown (the board's and the API's columns, a dataset row's verdict) and the stored record: a
  column edited after the run (`shown_of_record` is the one projection the site's columns must equal);
- what the verdict stands on: the master seed against the digest published before the run, the record's digest,
  the kernel's and the problem's sha256 against the sources run now (a swapped source);
- the record and its reproduction: a verdict figure (status, correct, a distribution's pass/fail) or an error
  figure, explained by the differences above, by other software or hardware, or else by the kernel itself.

A difference of a verdict, or of what it stands on, fails a comparison (`Comparison.failed`); error figures fail
it only when strict. Timing is measured afresh and only shown. Both records are plain dicts in the shape of
record.py. stdlib only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from evaluator.harness import seeds

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
DISTRIBUTION_VERDICT = ("passed", "skipped")
VERDICT_FIGURES = ("status", "correct", "standard_correct", "reference_constant", "params_randomised")
# The software and hardware a verdict was measured on: a difference here explains differing figures.
ENVIRONMENT_KEYS = ("device", "device_name", "arch", "torch", "cuda", "cudnn", "driver", "python", "harness_version")
# Timing is measured afresh by a reproduction; it is shown, never expected to agree to the digit.
TIMING_FIGURES = ("speedup", "speedup_fp32", "memory_ratio")
# What the board, the API and the dataset show of a verdict (the site's columns and distribution rows).
SHOWN_FIGURES: tuple[str, ...] = ("status", "correct", "standard_correct", "speedup", "speedup_ci_low")
SHOWN_FIGURES += ("speedup_ci_high", "speedup_fp32", "memory_ratio")
SHOWN_DISTRIBUTION = ("passed", "skipped", "trials", "max_abs_error", "max_rel_error")
DISTRIBUTION_NAMES = ("D1", "D2", "D3", "D4")


@dataclass(frozen=True, slots=True)
class Difference:
    """One figure that is not the same; `verdict` when it is (or undermines) a verdict, not only an error figure."""

    figure: str
    before: Any
    after: Any
    cause: str = ""
    verdict: bool = False

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
        return text + (f"  [cause: {self.cause}]" if self.cause else "")


@dataclass(frozen=True, slots=True)
class Published:
    """What was published about a verdict besides its record; None where the reader does not have it."""

    shown: dict[str, Any] | None = None  # the board's/API's/dataset's figures, in shown_of_record's naming
    seeds_digest: str | None = None  # the commitment published before the run
    master: str | None = None  # the master seed the reproduction ran with (stored, or revealed)
    kernel_sha256: str | None = None  # the kernel's published hash (the site's column, a dataset row's)
    problem_sha256: str | None = None  # the problem's published hash


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _finite(value: Any, *, positive: bool = False) -> float | None:
    if not _number(value) or (positive and value <= 0):
        return None
    return float(value)


def figures(record: dict[str, Any]) -> dict[str, Any]:
    """The verdict's figures that a reproduction with the same seeds must give again, by name."""
    out = {name: record.get(name) for name in VERDICT_FIGURES}
    for dist in record.get("distributions") or []:
        for name in DISTRIBUTION_FIGURES:
            out[f"{dist.get('name')}.{name}"] = dist.get(name)
    return out


def shown_of_record(record: dict[str, Any]) -> dict[str, Any]:
    """What the board, the API and the dataset must show for `record` (evaluator/record_projection.py projects a
    record onto the site's columns the same way): a verdict is correct only with status ok; a number that is not
    finite (or not positive, for ratios) shows as null."""
    ok = record.get("status") == "ok"
    low, high = (record.get("speedup_ci") or [None, None])[:2]
    out: dict[str, Any] = {
        "status": record.get("status"),
        "correct": bool(record.get("correct")) if ok else False,
        "standard_correct": record.get("standard_correct"),
        "speedup": _finite(record.get("speedup"), positive=True),
        "speedup_ci_low": _finite(low),
        "speedup_ci_high": _finite(high),
        "speedup_fp32": _finite(record.get("speedup_fp32"), positive=True),
        "memory_ratio": _finite(record.get("memory_ratio"), positive=True),
    }
    for dist in record.get("distributions") or []:
        name = dist.get("name")
        if name not in DISTRIBUTION_NAMES:
            continue
        trials = dist.get("trials")
        passed = dist.get("passed")
        out |= {
            f"{name}.passed": passed if isinstance(passed, bool) else None,
            f"{name}.skipped": bool(dist.get("skipped")),
            f"{name}.trials": trials if isinstance(trials, int) and 0 <= trials < 32768 else 0,
            f"{name}.max_abs_error": _finite(dist.get("max_abs_error")),
            f"{name}.max_rel_error": _finite(dist.get("max_rel_error")),
        }
    return out


def shown_from_columns(columns: dict[str, Any], distributions: list[dict[str, Any]] | None) -> dict[str, Any]:
    """What readers were shown, from the site's columns (Evaluation's names: `result_status`, `correct`, ...,
    as the API's evaluation detail has them) and its distribution rows, in shown_of_record's naming."""
    out = {name: columns.get("result_status" if name == "status" else name) for name in SHOWN_FIGURES}
    for dist in distributions or []:
        if dist.get("name") in DISTRIBUTION_NAMES:
            out |= {f"{dist['name']}.{key}": dist.get(key) for key in SHOWN_DISTRIBUTION}
    return out


def read_document(document: dict[str, Any]) -> tuple[dict[str, Any], Published]:
    """The record a document holds and what it publishes beside it: a dataset row ("record", with its verdict,
    hashes and seeds' digest), the API's evaluation detail ("result", with its columns and rows), or a bare
    record (nothing more)."""
    if isinstance(document.get("record"), dict):
        verdict = document.get("verdict") or {}
        low, high = (verdict.get("speedup_ci") or [None, None])[:2]
        columns = verdict | {"result_status": verdict.get("status"), "speedup_ci_low": low, "speedup_ci_high": high}
        return document["record"], Published(
            shown=shown_from_columns(columns, verdict.get("distributions")),
            seeds_digest=(document.get("seeds") or {}).get("digest"),
            kernel_sha256=(document.get("kernel") or {}).get("sha256"),
            problem_sha256=(document.get("problem") or {}).get("sha256"),
        )
    if isinstance(document.get("result"), dict):
        return document["result"], Published(
            shown=shown_from_columns(document, document.get("distributions")),
            seeds_digest=(document.get("seeds") or {}).get("digest"),
        )
    return document, Published()


def _is_verdict(name: str) -> bool:
    return name in VERDICT_FIGURES or ("." in name and name.rpartition(".")[2] in DISTRIBUTION_VERDICT)


def differences(original: dict[str, Any], again: dict[str, Any]) -> list[Difference]:
    """Figures (per distribution and of the verdict) that differ between `original` and its reproduction."""
    before, after = figures(original), figures(again)
    return [
        Difference(name, before.get(name), after.get(name), verdict=_is_verdict(name))
        for name in sorted(set(before) | set(after), key=_order)
        if before.get(name) != after.get(name)
    ]


def environment_differences(original: dict[str, Any], again: dict[str, Any]) -> list[Difference]:
    """Where the two were measured differently (a key the reproduction did not record, e.g. the driver outside the
    site, is not a difference)."""
    a, b = original.get("environment") or {}, again.get("environment") or {}
    differ = [k for k in ENVIRONMENT_KEYS if b.get(k) is not None and a.get(k) != b.get(k)]
    return [Difference(k, a.get(k), b.get(k)) for k in differ]


def tampering(original: dict[str, Any], again: dict[str, Any], published: Published) -> list[Difference]:
    """What does not hold together between the published verdict, the stored record and what the reproduction ran
    on; each a verdict-level difference with its cause."""
    found: list[Difference] = []
    if published.shown is not None:
        expected = shown_of_record(original)
        for name in sorted(set(expected) | set(published.shown), key=_order):
            if published.shown.get(name) != expected.get(name):
                found.append(
                    Difference(
                        f"shown {name}",
                        expected.get(name),
                        published.shown.get(name),
                        "what the board and the API show is not what the stored record says: a stored column "
                        "was edited after the run",
                        verdict=True,
                    )
                )
    env, env_again = original.get("environment") or {}, again.get("environment") or {}
    recorded_digest = env.get("seeds_digest")
    if published.seeds_digest and published.master and seeds.digest(published.master) != published.seeds_digest:
        found.append(
            Difference(
                "seeds: digest of the stored master",
                published.seeds_digest,
                seeds.digest(published.master),
                "the stored master seed does not match the digest published before the run: the master was "
                "replaced, so the reproduction's inputs are not the verdict's",
                verdict=True,
            )
        )
    if published.seeds_digest and recorded_digest and recorded_digest != published.seeds_digest:
        found.append(
            Difference(
                "seeds: the record's digest",
                published.seeds_digest,
                recorded_digest,
                "the record commits to other seeds than the digest published before the run",
                verdict=True,
            )
        )
    if published.master and env_again.get("seeds_digest") not in (None, seeds.digest(published.master)):
        found.append(
            Difference(
                "seeds: the reproduction's digest",
                seeds.digest(published.master),
                env_again.get("seeds_digest"),
                "the reproduction did not run with the given master seed",
                verdict=True,
            )
        )
    found += _source_differences("kernel", env, env_again, published.kernel_sha256)
    found += _source_differences("problem", env, env_again, published.problem_sha256)
    return found


def _source_differences(
    what: str, env: dict[str, Any], env_again: dict[str, Any], published: str | None
) -> list[Difference]:
    """The evaluated source's sha256 (the record's) against the one run now and the published one."""
    key = f"{what}_sha256"
    recorded, run_now = env.get(key), env_again.get(key)
    found = []
    if recorded and run_now and recorded != run_now:
        found.append(
            Difference(
                key,
                recorded,
                run_now,
                f"the {what} source run now is not the one the verdict evaluated (a swapped {what} source)",
                verdict=True,
            )
        )
    if recorded and published and recorded != published:
        found.append(
            Difference(
                f"published {key}",
                recorded,
                published,
                f"the {what}'s published sha256 is not the one the verdict evaluated",
                verdict=True,
            )
        )
    return found


def _cause(tampered: list[Difference], envs: list[Difference]) -> str:
    """Why the reproduction's figures differ from the record's."""
    inputs = [d for d in tampered if not d.figure.startswith("shown ")]
    if inputs:
        return "; ".join(dict.fromkeys(d.cause for d in inputs))
    if envs:
        return "measured on other software or hardware (" + ", ".join(d.figure for d in envs) + ")"
    return (
        "same kernel, problem, seeds and software: the kernel gives other results on the same inputs "
        "(nondeterministic), or the stored record was edited"
    )


@dataclass(frozen=True, slots=True)
class Comparison:
    """A verdict against its reproduction and what was published about it."""

    original: dict[str, Any]
    again: dict[str, Any]
    tampered: list[Difference] = field(default_factory=list)  # published vs stored vs run: always verdict-level
    differences: list[Difference] = field(default_factory=list)  # the record vs the reproduction, with causes
    environment: list[Difference] = field(default_factory=list)

    @property
    def verdict_differs(self) -> bool:
        return bool(self.tampered) or any(d.verdict for d in self.differences)

    def failed(self, *, strict: bool = False) -> bool:
        """A verdict (or what it stands on) differs; with `strict`, any error figure too."""
        return self.verdict_differs or (strict and bool(self.differences))

    def summary(self) -> str:
        verdicts = [d for d in self.differences if d.verdict]
        if self.tampered:
            return f"{len(self.tampered)} inconsistency(ies) between the published verdict, its record and its sources"
        if verdicts:
            return f"the verdict differs: {', '.join(d.figure for d in verdicts)}"
        if self.differences:
            return f"{len(self.differences)} error figure(s) differ; the verdict is the same"
        return "identical"


def compare(original: dict[str, Any], again: dict[str, Any], published: Published | None = None) -> Comparison:
    tampered = tampering(original, again, published or Published())
    envs = environment_differences(original, again)
    cause = _cause(tampered, envs)
    diffs = [replace(d, cause=cause) for d in differences(original, again)]
    return Comparison(original, again, tampered, diffs, envs)


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


def report(original: dict[str, Any], again: dict[str, Any], published: Published | None = None) -> str:
    """What a reader needs: both verdicts' per-distribution figures, then what differs, by how much and why."""
    result = compare(original, again, published)
    env = again.get("environment") or {}
    lines = [f"reproduction on {env.get('device_name') or env.get('device')} (torch {env.get('torch')}):"]
    lines += [f"  status={again.get('status')} correct={again.get('correct')}"] + table(again)
    lines += ["recorded verdict:", f"  status={original.get('status')} correct={original.get('correct')}"]
    lines += table(original)
    if result.tampered:
        lines.append(f"{len(result.tampered)} inconsistency(ies) in what the verdict stands on:")
        lines += [f"  {d.line()}" for d in result.tampered]
    if result.differences:
        lines.append(f"{len(result.differences)} figure(s) differ:")
        lines += [f"  {d.line()}" for d in result.differences]
    else:
        lines.append("identical: every per-distribution pass/fail and error figure is the same")
    if result.environment:
        lines.append("measured on different software or hardware:")
        lines += [f"  {d.line()}" for d in result.environment]
    timing = [Difference(k, original.get(k), again.get(k)) for k in TIMING_FIGURES if original.get(k) != again.get(k)]
    if timing:
        lines.append("timing (measured afresh, not expected to agree to the digit):")
        lines += [f"  {d.line()}" for d in timing]
    lines.append(f"result: {result.summary()}")
    return "\n".join(lines)
