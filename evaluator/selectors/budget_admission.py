"""Reads about the GPU-seconds an evaluation holds while it is queued or running, and which queued evaluations
their budgets can take now.

An evaluation sent to a worker (QUEUED with `enqueued_at` set) or running holds its bound, the harness timeout
(EVALUATOR_HARNESS_TIMEOUT): what it may still take. On finish its bound gives way to what it used (its
`harness_seconds`), so the unused part returns to the budget. An evaluation whose uploader's or LLM's GPU-seconds
cannot hold its bound stays queued without being sent (`enqueued_at` None: held), and is sent once finished
evaluations or the window free enough (evaluator.services.evaluations). So an account's kernels waiting at a worker
never add up to more than its remaining GPU-seconds, however many it uploads.

When nothing of a budget is held and its finished evaluations have not used it up, one evaluation may start even
if its bound is larger than what is left (a budget smaller than one timeout still runs kernels, one at a time).
"""

from __future__ import annotations

from django.db.models import Q

from evaluator.models import Evaluation
from evaluator.selectors.budget import Budget, bound_seconds, budget_for_llm, budget_for_user


def _room(budget: Budget) -> tuple[float, bool]:
    """(GPU-seconds left, whether the budget holds nothing now and its finished use left some)."""
    if budget.exempt:
        return float("inf"), True
    gpu = budget.limit("gpu_seconds_per_day")
    return gpu.limit - gpu.used, gpu.reserved == 0 and gpu.used < gpu.limit


def budget_admitted(*, evaluation_ids: list[int]) -> set[int]:
    """Of these queued evaluations (oldest first), those whose uploader's and LLM's GPU-seconds hold their bound
    after the ones before them. Rows already sent (they hold their bound), staff and project uploads and the site's
    own re-evaluations are always admitted."""
    rows = (
        Evaluation.objects.filter(pk__in=evaluation_ids)
        .select_related("kernel__submission__uploader", "kernel__llm", "re_evaluation")
        .order_by("pk")
    )
    bound = bound_seconds()
    rooms: dict[tuple[str, int], tuple[float, bool]] = {}
    admitted: set[int] = set()
    for evaluation in rows:
        uploader = evaluation.kernel.submission.uploader
        sent = evaluation.enqueued_at is not None or evaluation.status != Evaluation.Status.QUEUED
        if uploader is None or uploader.is_staff or hasattr(evaluation, "re_evaluation") or sent:
            admitted.add(evaluation.pk)
            continue
        keys = (("user", uploader.pk), ("llm", evaluation.kernel.llm_id))
        for kind, pk in keys:
            if (kind, pk) not in rooms:
                budget = budget_for_user(user=uploader) if kind == "user" else budget_for_llm(llm=evaluation.kernel.llm)
                rooms[(kind, pk)] = _room(budget)
        if all(rooms[key][0] >= bound or rooms[key][1] for key in keys):
            admitted.add(evaluation.pk)
            for key in keys:
                rooms[key] = (rooms[key][0] - bound, False)
    return admitted


def budget_held(*, kernel_id: int) -> list[int]:
    """The held evaluations (queued, not sent) of the uploader and of the LLM of this kernel, oldest first."""
    from catalogue.models import Kernel

    kernel = Kernel.objects.select_related("submission").get(pk=kernel_id)
    owners = Q(kernel__llm_id=kernel.llm_id)
    if kernel.submission.uploader_id is not None:
        owners |= Q(kernel__submission__uploader_id=kernel.submission.uploader_id)
    held = Evaluation.objects.filter(owners, status=Evaluation.Status.QUEUED, is_current=True, enqueued_at=None)
    return list(held.order_by("pk").values_list("pk", flat=True))
