"""The kernel inspector: one page per kernel and its raw result record. Thin: parse, read, render."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from inspector.selectors import kernel_inspection, kernel_result_record


def _evaluation_id(request: HttpRequest) -> int | None:
    value = request.GET.get("evaluation")
    if not value:
        return None
    if not value.isdigit():
        raise Http404("Bad evaluation id")
    return int(value)


@require_GET
def kernel_detail(request: HttpRequest, pk: int) -> HttpResponse:
    inspection = kernel_inspection(pk, evaluation_id=_evaluation_id(request))
    return render(request, "inspector/kernel_detail.html", {"i": inspection, "kernel": inspection.kernel})


@require_GET
def kernel_result_json(request: HttpRequest, pk: int) -> JsonResponse:
    record = kernel_result_record(pk, evaluation_id=_evaluation_id(request))
    return JsonResponse(record, json_dumps_params={"indent": 2}, safe=False)
