"""Reads about the compute budget: what an account and an LLM may still use, and why an upload or a run is refused.

Three limits, each for an account (the uploader) and for an LLM (everyone uploading under it), over a rolling
24-hour window:

- kernels per day: kernels uploaded in the window (counted at upload);
- GPU-seconds per day: the harness seconds of evaluations finished in the window (`Evaluation.harness_seconds`,
  charged from what the harness used: evaluator.services.evaluations), plus the bound (the harness timeout) of every
  evaluation sent to a worker or running: it is charged what it may still take when it is sent, and the unused part
  comes back when it finishes (evaluator.selectors.budget_admission, which also holds back what does not fit);
- kernels queued at once: current evaluations queued or running.

Defaults are the BUDGET_* settings; staff raise or cut them per account or per LLM with a ComputeBudget row (the
admin). Staff accounts, and uploads by the project itself (no uploader), have no budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db.models import Q, Sum
from django.utils import timezone

from catalogue.models import LLM, Kernel
from evaluator.models import ComputeBudget, Evaluation

WINDOW = timedelta(hours=24)
LIMITS = (
    ("kernels_per_day", "kernels per day", "BUDGET_KERNELS_PER_DAY"),
    ("gpu_seconds_per_day", "GPU-seconds per day", "BUDGET_GPU_SECONDS_PER_DAY"),
    ("queued_max", "kernels queued at once", "BUDGET_QUEUED_MAX"),
)
ACTIVE = (Evaluation.Status.QUEUED, Evaluation.Status.RUNNING)
# Re-evaluations the site queues itself (evaluator.services.reruns, RERUN_GPU_SECONDS_PER_DAY) are not the
# uploader's doing: they neither count against nor wait for the uploader's budget.
UPLOADERS_OWN = Q(re_evaluation__isnull=True)
# Sent to a worker (the broker holds its message) or running: the rows that hold their bound.
HOLDING = Q(status=Evaluation.Status.RUNNING) | Q(status=Evaluation.Status.QUEUED, enqueued_at__isnull=False)


def bound_seconds() -> float:
    """What one evaluation may take at most: the harness timeout (the runner kills the harness after it)."""
    return float(settings.EVALUATOR_HARNESS_TIMEOUT)


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit of one budget: how much of it the window holds, and when the oldest of that leaves the window."""

    name: str  # kernels_per_day, gpu_seconds_per_day, queued_max
    label: str
    limit: int
    used: float  # for GPU-seconds: what finished evaluations used plus what sent or running ones hold
    resets_at: datetime | None  # None: nothing counted, or the queue (frees as kernels finish)
    reserved: float = 0.0  # GPU-seconds held by evaluations sent to a worker or running (their bound)

    @property
    def remaining(self) -> float:
        return max(0.0, self.limit - self.used)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "limit": self.limit,
            "used": round(self.used, 1),
            "remaining": round(self.remaining, 1),
            "reserved": round(self.reserved, 1),
            "resets_at": self.resets_at.isoformat() if self.resets_at else None,
        }


@dataclass(frozen=True, slots=True)
class Budget:
    """An account's or an LLM's budget now."""

    subject: str  # 'account "alice"', 'LLM "my-model"'
    limits: tuple[Limit, ...]
    exempt: bool = False

    def limit(self, name: str) -> Limit:
        return next(limit for limit in self.limits if limit.name == name)

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "exempt": self.exempt, "limits": [lim.as_dict() for lim in self.limits]}


@dataclass(frozen=True, slots=True)
class BudgetRefusal:
    """Why an upload is refused: the limit, the subject, when it resets, as one message."""

    message: str
    limit: str
    subject: str
    resets_at: datetime | None

    @property
    def retry_after(self) -> int:
        """Seconds until the limit resets (a minute for the queue, which frees as kernels finish)."""
        if self.resets_at is None:
            return 60
        return max(1, int((self.resets_at - timezone.now()).total_seconds()) + 1)


def _limits_for(*, override: ComputeBudget | None) -> dict[str, int]:
    values = {}
    for name, _, setting in LIMITS:
        value = getattr(override, name, None) if override is not None else None
        values[name] = int(value if value is not None else getattr(settings, setting))
    return values


def _frees_at(stamps: list[tuple[datetime, float]], excess: float) -> datetime | None:
    """When enough of the window's usage (oldest first) has left it to free `excess`."""
    freed = 0.0
    for stamp, amount in stamps:
        freed += amount
        if freed >= excess:
            return stamp + WINDOW
    return stamps[-1][0] + WINDOW if stamps else None


def _budget(*, subject: str, owner: Q, kernels: Q, override: ComputeBudget | None, extra: int = 0) -> Budget:
    """`owner` filters evaluations, `kernels` kernels, of this account or LLM. `extra` kernels are about to be
    added (an upload): resets_at then says when they would fit."""
    now = timezone.now()
    since = now - WINDOW
    limits = _limits_for(override=override)

    uploads = list(
        Kernel.objects.filter(kernels, created_at__gte=since)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    kernel_excess = len(uploads) + max(extra, 1) - limits["kernels_per_day"]
    kernel_reset = _frees_at([(t, 1.0) for t in uploads], kernel_excess) if kernel_excess > 0 else None

    charged = cast(  # both columns are set: the filter compares them
        "list[tuple[datetime, float]]",
        list(
            Evaluation.objects.filter(owner, UPLOADERS_OWN, finished_at__gte=since, harness_seconds__gt=0)
            .order_by("finished_at")
            .values_list("finished_at", "harness_seconds")
        ),
    )
    seconds = sum(s for _, s in charged)
    gpu_excess = seconds - limits["gpu_seconds_per_day"]
    gpu_reset = _frees_at(charged, gpu_excess + 1e-9) if gpu_excess >= 0 else None

    queued = Evaluation.objects.filter(owner, UPLOADERS_OWN, is_current=True, status__in=ACTIVE).count()
    holding = Evaluation.objects.filter(owner, UPLOADERS_OWN, HOLDING, is_current=True).count()
    reserved = {"gpu_seconds_per_day": holding * bound_seconds()}
    values = {"kernels_per_day": (len(uploads), kernel_reset), "gpu_seconds_per_day": (seconds, gpu_reset)}
    values["queued_max"] = (queued, None)
    return Budget(
        subject=subject,
        limits=tuple(
            Limit(
                name=name,
                label=label,
                limit=limits[name],
                used=values[name][0] + reserved.get(name, 0.0),
                resets_at=values[name][1],
                reserved=reserved.get(name, 0.0),
            )
            for name, label, _ in LIMITS
        ),
    )


def _exempt(user: Any) -> bool:
    return user is None or not getattr(user, "is_authenticated", False) or bool(user.is_staff)


def budget_for_user(*, user: Any, extra: int = 0) -> Budget:
    """The account's budget now (staff: exempt, no limits shown)."""
    subject = f"account {user.get_username()!r}" if user is not None else "the project"
    if _exempt(user):
        return Budget(subject=subject, limits=(), exempt=True)
    return _budget(
        subject=subject,
        owner=Q(kernel__submission__uploader=user),
        kernels=Q(submission__uploader=user),
        override=ComputeBudget.objects.filter(user=user).first(),
        extra=extra,
    )


def budget_for_llm(*, llm: LLM, extra: int = 0) -> Budget:
    """The LLM's budget now: everything uploaded under it, whoever uploaded it."""
    return _budget(
        subject=f"LLM {llm.name!r}",
        owner=Q(kernel__llm=llm),
        kernels=Q(llm=llm),
        override=ComputeBudget.objects.filter(llm=llm).first(),
        extra=extra,
    )


def _when(stamp: datetime | None) -> str:
    return stamp.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if stamp else ""


def _refusal(budget: Budget, kernels: int) -> BudgetRefusal | None:
    """The first limit of `budget` that an upload of `kernels` kernels would pass, as a refusal."""
    if budget.exempt:
        return None
    per_day = budget.limit("kernels_per_day")
    if kernels > per_day.limit:
        return BudgetRefusal(
            f"This bundle has {kernels} kernels, more than the {per_day.limit} {per_day.label} of {budget.subject}: "
            "split it over several days, or ask staff to raise the limit. Nothing was queued.",
            per_day.name,
            budget.subject,
            None,
        )
    if per_day.used + kernels > per_day.limit:
        return BudgetRefusal(
            f"Daily kernel limit of {budget.subject}: {per_day.limit} {per_day.label}, {int(per_day.used)} used in "
            f"the last 24 hours, so {int(per_day.remaining)} more fit and this bundle has {kernels}. It fits from "
            f"{_when(per_day.resets_at)}. Nothing was queued.",
            per_day.name,
            budget.subject,
            per_day.resets_at,
        )
    gpu = budget.limit("gpu_seconds_per_day")
    if gpu.used - gpu.reserved >= gpu.limit:  # spent by finished evaluations (what is held only delays the rest)
        return BudgetRefusal(
            f"GPU-time limit of {budget.subject}: {gpu.limit} {gpu.label}, {gpu.used - gpu.reserved:.0f} used by "
            f"evaluations finished in the last 24 hours. It resets (enough of it leaves the window) at "
            f"{_when(gpu.resets_at)}. Nothing was queued.",
            gpu.name,
            budget.subject,
            gpu.resets_at,
        )
    queue = budget.limit("queued_max")
    if queue.used + kernels > queue.limit:
        return BudgetRefusal(
            f"Queue limit of {budget.subject}: {queue.limit} {queue.label}, {int(queue.used)} queued or running "
            f"now, so {int(queue.remaining)} more fit and this bundle has {kernels}. Room frees as they finish. "
            "Nothing was queued.",
            queue.name,
            budget.subject,
            None,
        )
    return None


def budget_refusal(*, user: Any, llm: LLM | None, kernels: int) -> BudgetRefusal | None:
    """Why an upload of `kernels` kernels by `user` under `llm` (None: a new LLM) must be refused, or None."""
    if _exempt(user):
        return None
    refusal = _refusal(budget_for_user(user=user, extra=kernels), kernels)
    if refusal is None and llm is not None and llm.pk is not None:
        refusal = _refusal(budget_for_llm(llm=llm, extra=kernels), kernels)
    return refusal


def budget_spent(*, evaluation: Evaluation) -> str | None:
    """Why a claimed evaluation must not run: its uploader's or its LLM's GPU-seconds for the day are spent (the
    upload fitted, but earlier kernels of the same account used it up since). None: it may run."""
    kernel = Kernel.objects.select_related("submission__uploader", "llm").get(pk=evaluation.kernel_id)
    uploader = kernel.submission.uploader
    if _exempt(uploader) or not Evaluation.objects.filter(UPLOADERS_OWN, pk=evaluation.pk).exists():
        return None
    since = timezone.now() - WINDOW
    subjects = (
        (Q(kernel__submission__uploader=uploader), ComputeBudget.objects.filter(user=uploader).first(), "user"),
        (Q(kernel__llm=kernel.llm), ComputeBudget.objects.filter(llm=kernel.llm).first(), "llm"),
    )
    for owner, override, kind in subjects:
        # One sum per claim; the full budget (and when it resets) only when it is spent.
        spent = Evaluation.objects.filter(owner, UPLOADERS_OWN, finished_at__gte=since)
        used = spent.aggregate(s=Sum("harness_seconds"))["s"] or 0
        if used < _limits_for(override=override)["gpu_seconds_per_day"]:
            continue
        budget = budget_for_user(user=uploader) if kind == "user" else budget_for_llm(llm=kernel.llm)
        gpu = budget.limit("gpu_seconds_per_day")
        if gpu.used - gpu.reserved >= gpu.limit:  # finished use alone: this evaluation's own bound is held too
            return (
                f"not run: the GPU-time limit of {budget.subject} ({gpu.limit} {gpu.label}) was used up by its "
                f"other evaluations; it resets at {_when(gpu.resets_at)}, then staff can re-run this kernel"
            )
    return None
