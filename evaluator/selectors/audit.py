"""Reads of the reward-hack audit: a kernel's flags, whether an evaluation earns the judges, what they are told."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from catalogue.models import Kernel
from evaluator.models import AuditFlag, Evaluation


def kernel_flags(*, kernel_id: int) -> QuerySet[AuditFlag]:
    """Every flag of one kernel, newest first, with its reviewer."""
    return AuditFlag.objects.filter(kernel_id=kernel_id).select_related("reviewed_by").order_by("-created_at")


def judge_eligible(evaluation: Evaluation) -> bool:
    """docs/protocol.md §7: every correct kernel whose verified speedup exceeds 1 gets the judge audit."""
    return (
        evaluation.status == Evaluation.Status.DONE
        and evaluation.is_current
        and bool(evaluation.correct)
        and (evaluation.speedup or 0) > 1
    )


def harness_facts(kernel: Kernel, evaluation: Evaluation | None) -> dict[str, Any]:
    """What the judge is told that the evaluator measured (trusted block of the prompt)."""
    facts: dict[str, Any] = {"problem": f"L{kernel.problem.level}/{kernel.problem.problem_id} {kernel.problem.name}"}
    static = AuditFlag.objects.filter(kernel=kernel, source=AuditFlag.Source.RULE).exclude(severity="info")
    facts["static_rule_hits"] = [f"{f.source_name} ({f.severity}): {f.rationale}"[:300] for f in static[:15]]
    if evaluation is not None:
        record = evaluation.result if isinstance(evaluation.result, dict) else {}
        facts.update(
            {
                "correct_verified": evaluation.correct,
                "speedup_vs_tf32": evaluation.speedup,
                "speedup_vs_fp32": evaluation.speedup_fp32,
                "memory_ratio": evaluation.memory_ratio,
                "hardware": evaluation.hardware,
                "distributions": [
                    {k: d.get(k) for k in ("name", "passed", "skipped", "max_rel_error")}
                    for d in record.get("distributions") or []
                    if isinstance(d, dict)
                ],
                "checks": [
                    {k: c.get(k) for k in ("name", "passed", "detail")}
                    for c in record.get("checks") or []
                    if isinstance(c, dict)
                ],
            }
        )
    return facts
