"""Software stacks: what a verdict was measured on (torch, CUDA, driver, GPU, from its record's `environment`),
which stack a hardware kind's workers run now, and a kernel's verdicts across stacks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from evaluator.models import Evaluation

# (environment key, label): the parts of a stack whose change can change a verdict.
STACK_KEYS = (("torch", "torch"), ("cuda", "CUDA"), ("driver", "driver"), ("device_name", "GPU"))


def stack_label(environment: dict[str, Any] | None) -> str:
    """ "torch 2.13.0 / CUDA 13.0 / GPU NVIDIA H200" (only the parts the record has); "" when it has none."""
    env = environment or {}
    return " / ".join(f"{label} {env[key]}" for key, label in STACK_KEYS if env.get(key))


def evaluation_stack(evaluation: Evaluation) -> str:
    return stack_label((evaluation.result or {}).get("environment"))


def current_stack(*, hardware: str) -> str:
    """The stack of the latest finished evaluation on `hardware`: what its workers run now ("" when unknown)."""
    rows = Evaluation.objects.filter(
        hardware=hardware, status=Evaluation.Status.DONE, result__environment__torch__isnull=False
    ).order_by("-finished_at", "-pk")
    for result in rows.values_list("result", flat=True)[:1]:
        return stack_label((result or {}).get("environment"))
    return ""


def stacks(*, hardware: str | None = None) -> list[str]:
    """Every stack current verdicts were measured on (for the board's filter), newest first."""
    rows = Evaluation.objects.filter(is_current=True, status=Evaluation.Status.DONE)
    if hardware:
        rows = rows.filter(hardware=hardware)
    seen: dict[str, None] = {}
    for result in rows.order_by("-finished_at").values_list("result", flat=True).iterator():
        label = stack_label((result or {}).get("environment"))
        if label:
            seen.setdefault(label, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class VerdictAtStack:
    """One finished evaluation of a kernel: its verdict and the stack it was measured on."""

    evaluation_id: int
    hardware: str
    stack: str
    finished_at: datetime | None
    correct: bool | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    is_current: bool
    re_evaluation: bool  # queued by the site because the stack changed


def kernel_verdict_history(*, kernel_id: int) -> list[VerdictAtStack]:
    """Every finished evaluation of a kernel, oldest first: its speedup history across versions."""
    rows = (
        Evaluation.objects.filter(kernel_id=kernel_id, status=Evaluation.Status.DONE)
        .select_related("re_evaluation")
        .order_by("finished_at", "pk")
    )
    return [
        VerdictAtStack(
            evaluation_id=ev.pk,
            hardware=ev.hardware,
            stack=evaluation_stack(ev),
            finished_at=ev.finished_at,
            correct=ev.correct,
            speedup=ev.speedup,
            speedup_ci_low=ev.speedup_ci_low,
            speedup_ci_high=ev.speedup_ci_high,
            is_current=ev.is_current,
            re_evaluation=hasattr(ev, "re_evaluation"),
        )
        for ev in rows
    ]
