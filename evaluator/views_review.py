"""Staff review of audit flags in the browser (mounted at /audit/, namespace "evaluator").

POST-only actions behind CSRF and a staff check; they call one service each. With htmx the review form is swapped
in place (the `inspector/_flag_actions.html` partial); without it the browser is redirected back to the kernel.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from catalogue.models import Kernel
from evaluator.audit.config import judge_status
from evaluator.models import AuditFlag
from evaluator.selectors.review import QueueFilters, catalogue_legend, review_queue
from evaluator.services.audit import ReviewError, flag_review, kernel_audit_request


def _require_staff(request: HttpRequest) -> None:
    if not (request.user.is_authenticated and request.user.is_staff):
        raise PermissionDenied("staff only")


def _back(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = fallback
    return HttpResponseRedirect(target)


def _kernel_url(kernel_id: int, anchor: str = "") -> str:
    return reverse("inspector:kernel-detail", args=[kernel_id]) + (f"#{anchor}" if anchor else "")


@require_POST
def flag_review_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Confirm / dismiss / mark legitimate / reopen one flag, with a note."""
    _require_staff(request)
    flag = get_object_or_404(AuditFlag.objects.select_related("kernel"), pk=pk)
    action = request.POST.get("action", "")
    error = ""
    try:
        flag = flag_review(flag_id=flag.pk, user=request.user, action=action, note=request.POST.get("note", ""))
    except ReviewError as exc:
        error = str(exc)
    if request.headers.get("HX-Request"):
        context = {
            "flag": flag,
            "kernel": flag.kernel,
            "user": request.user,
            "review_error": error,
            "review_done": not error,
        }
        return render(request, "inspector/_flag_actions.html", context, status=400 if error else 200)
    if error:
        messages.error(request, f"Flag {flag.pk}: {error}")
    else:
        messages.success(request, f"Flag {flag.pk} ({flag.source_name}) is now {flag.get_review_state_display()}.")
    return _back(request, _kernel_url(flag.kernel_id, f"flag-{flag.pk}"))


@require_POST
def kernel_audit_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Re-run the static layer now and queue the LLM judges for one kernel (on demand)."""
    _require_staff(request)
    kernel = get_object_or_404(Kernel, pk=pk)
    outcome = kernel_audit_request(kernel_id=kernel.pk, force=request.POST.get("force") == "1")
    queued = outcome.judges_queued
    note = outcome.config_error or (f"judges queued: {', '.join(queued)}" if queued else outcome.no_judges)
    messages.info(request, f"Static audit stored {outcome.static_flags} flag(s); {note}")
    return _back(request, _kernel_url(kernel.pk))


@require_GET
def review_queue_view(request: HttpRequest) -> HttpResponse:
    """Flags waiting for a decision, filtered and paginated; kernels that count in a ranking first. Anonymous
    visitors are sent to the login page; other non-staff get the 403 page."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    _require_staff(request)
    get = request.GET
    filters = QueueFilters(
        state=get.get("state", "open")[:20],
        verdict=get.get("verdict", "")[:20],
        source=get.get("source", "")[:20],
        severity=get.get("severity", "")[:20],
        cls=get.get("cls", "")[:4],
        q=get.get("q", "").strip()[:200],
    )
    context = {
        "page": review_queue(filters=filters, page=get.get("page", 1)),
        "filters": filters,
        "judges": judge_status(),
        "legend": catalogue_legend(),
        "states": AuditFlag.Review.choices,
        "verdicts": AuditFlag.Verdict.choices,
        "sources": AuditFlag.Source.choices,
        "severities": AuditFlag.Severity.choices,
    }
    return render(request, "evaluator/review_queue.html", context)
