"""Software stacks: what a verdict was measured on (torch, CUDA, driver, GPU, from its record's `environment`),
which stack a hardware kind's workers run now, and a kernel's verdicts across stacks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from evaluator.models import Evaluation
from evaluator.record_projection import STACK_COLUMNS
from evaluator.selectors.eligibility import standing_q

# (environment key, label): the parts of a stack whose change can change a verdict.
STACK_KEYS = (("torch", "torch"), ("cuda", "CUDA"), ("driver", "driver"), ("device_name", "GPU"))
# A CPU's record names its device "cpu": its part of the label reads "CPU", not "GPU cpu".
CPU_PART = "CPU"


def _stack_part(key: str, label: str, value: object) -> str:
    if key == "device_name" and str(value).lower() == "cpu":
        return CPU_PART
    return f"{label} {value}"


def stack_label(environment: Mapping[str, Any] | None) -> str:
    """ "torch 2.13.0 / CUDA 13.0 / GPU NVIDIA H200", or "torch 2.13.0+cpu / CPU" (only the parts the record has);
    "" when it has none."""
    env = environment or {}
    return " / ".join(_stack_part(key, label, env[key]) for key, label in STACK_KEYS if env.get(key))


_COLUMNS = tuple(STACK_COLUMNS[key] for key, _ in STACK_KEYS)  # the parts' columns, in STACK_KEYS's order


def _label_of(columns: tuple[Any, ...]) -> str:
    """The label of one row's stack columns (in _COLUMNS's order)."""
    return stack_label({key: value for (key, _), value in zip(STACK_KEYS, columns, strict=True)})


def evaluation_stack(evaluation: Evaluation) -> str:
    return _label_of(tuple(getattr(evaluation, column) for column in _COLUMNS))


def current_stack(*, hardware: str) -> str:
    """The stack of the latest finished evaluation on `hardware` whose record names its torch: what its workers run
    now ("" when unknown)."""
    rows = (
        Evaluation.objects.filter(hardware=hardware, status=Evaluation.Status.DONE)
        .exclude(env_torch="")
        .order_by("-finished_at", "-pk")
    )
    for columns in rows.values_list(*_COLUMNS)[:1]:
        return _label_of(columns)
    return ""


def stacks(*, hardware: str | None = None) -> list[str]:
    """Every stack current verdicts were measured on (for the board's filter), newest first."""
    rows = Evaluation.objects.filter(standing_q(), status=Evaluation.Status.DONE)
    if hardware:
        rows = rows.filter(hardware=hardware)
    seen: dict[str, None] = {}
    for columns in rows.order_by("-finished_at").values_list(*_COLUMNS).iterator():
        label = _label_of(columns)
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


def stack_q(label: str) -> Q:
    """Evaluation rows measured on the stack `label` names (stack_label's form); every row for ""."""
    if not label:
        return Q()
    keys = {name: key for key, name in STACK_KEYS}
    q = Q()
    named = set()
    for part in label.split(" / "):
        if part == CPU_PART:
            named.add("device_name")
            q &= Q(env_device_name__iexact="cpu")
            continue
        name, _, value = part.partition(" ")
        if name not in keys or not value:
            return Q(pk__in=[])  # not a stack this site writes: nothing matches
        named.add(keys[name])
        q &= Q(**{STACK_COLUMNS[keys[name]]: value})
    for key, _ in STACK_KEYS:  # parts the label leaves out are absent from the record
        if key not in named:
            q &= Q(**{STACK_COLUMNS[key]: ""})
    return q


@dataclass(frozen=True, slots=True)
class BoardMeasured:
    """When a board's numbers were measured, and on which stacks (label, current verdicts), most used first."""

    first: datetime | None
    last: datetime | None
    stacks: list[tuple[str, int]]


def board_measured(*, hardware: str, problem_set: str, stack: str = "") -> BoardMeasured:
    """One query over the board's current verdicts: their stacks, and the first and last finish among those on
    `stack` (all of them for "")."""
    rows = Evaluation.objects.filter(
        standing_q(), status=Evaluation.Status.DONE, hardware=hardware, kernel__problem__problem_set=problem_set
    ).values_list(*_COLUMNS, "finished_at")
    counts: dict[str, int] = {}
    times = []
    for *parts, finished in rows.iterator():
        label = _label_of(tuple(parts))
        if label:
            counts[label] = counts.get(label, 0) + 1
        if finished and (not stack or label == stack):
            times.append(finished)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return BoardMeasured(min(times, default=None), max(times, default=None), ranked)
