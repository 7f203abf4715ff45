"""Writes for stored baselines: importing a baseline sweep (evaluator.harness.baselines) measured on a GPU machine."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from catalogue.models import Problem
from evaluator.models import Baseline
from evaluator.values import finite_number

PRECISIONS = {p.value for p in Baseline.Precision}  # type: ignore[attr-defined]  # TextChoices: mypy without django-stubs sees a tuple


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
            extra = {"source": "baseline sweep", "environment": environment}
            fields = (
                baseline_fields(stats, peak=stats.get("peak_memory_bytes"), extra=extra)
                if precision in PRECISIONS
                else None
            )
            if fields is None:
                report.skipped.append(f"{label} {precision}: {str(stats.get('error', 'not measured'))[:200]}")
                continue
            Baseline.objects.update_or_create(
                problem=problem, hardware=hardware, torch_version=torch_version, precision=precision, defaults=fields
            )
            report.stored += 1
    return report
