"""The kernel inspector: one page per kernel and its raw result record. Thin: parse, read, render."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluator.selectors.reproducibility import verdict_reproducibility
from inspector.selectors import kernel_inspection, kernel_result_record
from leaderboard.untrusted import strict_int


def _evaluation_id(request: HttpRequest) -> int | None:
    value = request.GET.get("evaluation")
    if not value:
        return None
    evaluation_id = strict_int(value, max_digits=18)
    if evaluation_id is None:
        raise Http404("Bad evaluation id")
    return evaluation_id


@require_GET
def kernel_detail(request: HttpRequest, pk: int) -> HttpResponse:
    inspection = kernel_inspection(pk, evaluation_id=_evaluation_id(request), staff=request.user.is_staff)
    reproducibility = verdict_reproducibility(kernel_id=pk, evaluation=inspection.evaluation)
    return render(
        request, "inspector/kernel_detail.html", {"i": inspection, "kernel": inspection.kernel, "r": reproducibility}
    )


@require_GET
def kernel_result_json(request: HttpRequest, pk: int) -> JsonResponse:
    record = kernel_result_record(pk, evaluation_id=_evaluation_id(request))
    return JsonResponse(record, json_dumps_params={"indent": 2}, safe=False)
