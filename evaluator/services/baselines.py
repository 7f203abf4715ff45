"""Writes for stored baselines: the robust aggregate of evaluations' paired measurements, and importing a baseline
sweep (evaluator.harness.workers.baselines) measured on a GPU machine.

A Baseline row is the median over samples kept in `stats["samples"]`: one per finished evaluation (its paired
measurement, keyed by evaluation id) and one for an imported sweep (key "sweep"). One noisy evaluation therefore
moves it by at most one rank; `min_ms`/`max_ms` show the spread and `evaluations` how many evaluations it holds."""

from __future__ import annotations

import json
import statistics
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from catalogue.models import Problem
from evaluator.models import Baseline
from evaluator.values import finite_number

PRECISIONS = {p.value for p in Baseline.Precision}


def baseline_fields(stats: Any, *, peak: Any = None, extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Baseline columns from one timing summary (`{median_ms, iqr_ms, mean_ms, calls, ...}`), sanitised; None when
    it has no usable median. Shared by the evaluation path and the sweep import so both store the same shape."""
    median = finite_number(stats.get("median_ms"), positive=True) if isinstance(stats, dict) else None
    if median is None:
        return None
    calls = stats.get("calls")
    return {
        "median_ms": median,
        "iqr_ms": finite_number(stats.get("iqr_ms")),
        "mean_ms": finite_number(stats.get("mean_ms")),
        "calls": calls if isinstance(calls, int) and not isinstance(calls, bool) and calls >= 0 else 0,
        "peak_memory_bytes": peak if isinstance(peak, int) and not isinstance(peak, bool) and peak >= 0 else None,
        "stats": {**stats, **(extra or {})},
    }


SWEEP = "sweep"
SAMPLES_KEPT = 1000  # per setting; the oldest evaluation samples are dropped beyond this
SAMPLE_KEYS = ("median_ms", "iqr_ms", "mean_ms", "calls", "peak_memory_bytes")


def _aggregate(samples: dict[str, dict[str, Any]], stats: dict[str, Any]) -> dict[str, Any]:
    """Baseline columns from its samples: the median of their medians, min and max, the evaluation count; iqr,
    mean, calls and peak memory come from the sample nearest the median (a real measurement, not a blend)."""
    medians = [s["median_ms"] for s in samples.values()]
    median = statistics.median(medians)
    nearest = min(samples.values(), key=lambda s: abs(s["median_ms"] - median))
    return {
        "median_ms": median,
        "min_ms": min(medians),
        "max_ms": max(medians),
        "evaluations": sum(1 for key in samples if key != SWEEP),
        "iqr_ms": nearest.get("iqr_ms"),
        "mean_ms": nearest.get("mean_ms"),
        "calls": nearest.get("calls") or 0,
        "peak_memory_bytes": nearest.get("peak_memory_bytes"),
        "stats": {**stats, "samples": samples, "aggregate": "median over samples"},
    }


def baseline_add_sample(*, key: str, fields: dict[str, Any], **setting: Any) -> Baseline:
    """Add (or replace) one sample of a baseline setting (`problem`/`problem_id`, hardware, torch_version,
    precision) and recompute the aggregate. `key` is an evaluation id, or SWEEP for an imported sweep. Call inside a
    transaction: the row is locked so that two evaluations finishing together both count."""
    sample = {k: fields.get(k) for k in SAMPLE_KEYS} | {"at": timezone.now().isoformat()}
    baseline = Baseline.objects.select_for_update().filter(**setting).first()
    if baseline is None:
        baseline, created = Baseline.objects.get_or_create(**setting, defaults=fields)
        if not created:  # another transaction created it meanwhile
            baseline = Baseline.objects.select_for_update().get(pk=baseline.pk)
    else:
        created = False
    samples: dict[str, dict[str, Any]] = {} if created else dict((baseline.stats or {}).get("samples") or {})
    if not created and not samples:  # a row stored before aggregation: its figure is the first sample
        old_stats = baseline.stats or {}
        old_key = str(old_stats.get("evaluation_id") or (SWEEP if old_stats.get("source") == "baseline sweep" else 0))
        samples[old_key] = {k: getattr(baseline, k) for k in SAMPLE_KEYS} | {"at": baseline.measured_at.isoformat()}
    samples.pop(key, None)
    samples[key] = sample
    while len(samples) > SAMPLES_KEPT:
        samples.pop(next(k for k in samples if k != SWEEP))
    for name, value in _aggregate(samples, fields["stats"]).items():
        setattr(baseline, name, value)
    baseline.save()
    return baseline


@dataclass
class BaselineImportReport:
    stored: int = 0
    problems: int = 0
    skipped: list[str] = field(default_factory=list)
    summary: dict | None = None


@transaction.atomic
def baselines_import(
    *, path: Path, hardware: str, problem_set: str, precisions: Collection[str] = PRECISIONS
) -> BaselineImportReport:
    """Store every measured precision (of `precisions`) of every problem in a sweep file. Problems are matched by
    sha256 within the problem set, so a sweep of another problem-set version never attaches to the wrong source.
    Limiting the precisions lets a sweep taken for one column (e.g. torch.compile on a sample) leave the others."""
    report = BaselineImportReport()
    lines = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    environment: dict[str, Any] = next((row.get("environment", {}) for row in lines if row.get("summary")), {})
    report.summary = next((row for row in lines if row.get("summary")), None)
    torch_version = environment.get("torch") or "unknown"
    by_sha = {p.sha256: p for p in Problem.objects.filter(problem_set=problem_set)}
    for row in lines:
        if row.get("summary"):
            continue
        label = f"L{row.get('level')}/{row.get('problem_id')}"
        problem = by_sha.get(row.get("sha256", ""))
        if problem is None:
            report.skipped.append(f"{label}: no problem with this sha256 in {problem_set}")
            continue
        if row.get("error"):
            report.skipped.append(f"{label}: {row['error'][:200]}")
            continue
        report.problems += 1
        for precision, stats in row.get("precisions", {}).items():
            if precision not in precisions:
                continue
            extra = {"source": "baseline sweep", "environment": environment, "launch_lead": row.get("launch_lead")}
            fields = (
                baseline_fields(stats, peak=stats.get("peak_memory_bytes"), extra=extra)
                if precision in PRECISIONS
                else None
            )
            if fields is None:
                report.skipped.append(f"{label} {precision}: {str(stats.get('error', 'not measured'))[:200]}")
                continue
            baseline_add_sample(
                key=SWEEP,
                fields=fields,
                problem=problem,
                hardware=hardware,
                torch_version=torch_version,
                precision=precision,
            )
            report.stored += 1
    return report
