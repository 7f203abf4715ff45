"""Profiles on request, staff only: ask for a torch.profiler trace of one evaluation; download it.
Thin: the logic is evaluator.services.profiles."""

from __future__ import annotations

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evaluator.models import Evaluation, ProfileRequest
from evaluator.services.profiles import profile_artefact, profile_request_create
from evaluator.views_review import _require_staff


@require_POST
def profile_request_view(request: HttpRequest, pk: int) -> HttpResponse:
    _require_staff(request)
    evaluation = get_object_or_404(Evaluation, pk=pk)
    profile = profile_request_create(evaluation=evaluation, user=request.user)
    if profile.status == ProfileRequest.Status.UNAVAILABLE:
        messages.error(request, f"Profile not possible: {profile.detail}")
    else:
        messages.success(request, f"Profile #{profile.pk} queued for a {evaluation.hardware} worker.")
    url = reverse("inspector:kernel-detail", args=[evaluation.kernel_id])
    return HttpResponseRedirect(f"{url}?evaluation={evaluation.pk}#profiles")


@require_GET
def profile_download_view(request: HttpRequest, pk: int, name: str) -> FileResponse:
    _require_staff(request)
    profile = get_object_or_404(ProfileRequest, pk=pk)
    path = profile_artefact(profile, name)
    if path is None:
        raise Http404("No such artefact")
    return FileResponse(path.open("rb"), as_attachment=True, filename=f"profile-{profile.pk}-{name}")
