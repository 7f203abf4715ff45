"""Pages for submitting: the upload form, a submission's page (live progress via htmx), its CSV, the account page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.middleware import HtmxDetails

from catalogue.models import Submission
from leaderboard.api.throttles import upload_allowed
from leaderboard.bundles import BundleError
from leaderboard.forms import SubmitForm
from leaderboard.selectors.budget import budget_overview
from leaderboard.selectors.submissions import submission_list, submission_progress, submission_results_csv
from leaderboard.selectors.tokens import api_token_for
from leaderboard.services.llms import LLMOwnershipError
from leaderboard.services.submissions import UPLOAD_FIELDS, submission_create_from_upload
from leaderboard.services.tokens import api_token_create

POLL_SECONDS = 2


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails  # set by django_htmx's middleware (settings MIDDLEWARE)


class AuthenticatedHttpRequest(HttpRequest):
    user: User  # behind login_required


@login_required
@require_http_methods(["GET", "POST"])
def submit(request: HttpRequest) -> HttpResponse:
    """Upload form. A rejected bundle comes back with the reason and the per-file report; nothing is stored.
    Uploads count against the API's "submissions" rate (429 past it)."""
    form = SubmitForm(request.POST or None, request.FILES or None, user=request.user)
    rejection: BundleError | None = None
    status = 200
    if request.method == "POST" and not upload_allowed(request):
        form.add_error(None, "Too many uploads: wait a while before the next one (the limit is shared with the API).")
        status = 429
    elif request.method == "POST" and form.is_valid():
        fields = {name: form.cleaned_data[name] for name in UPLOAD_FIELDS}
        try:
            submission = submission_create_from_upload(uploader=request.user, **fields)
        except BundleError as exc:
            rejection = exc
            status = exc.status  # 400, or 413 for a bundle over BUNDLE_MAX_BYTES
        except LLMOwnershipError as exc:
            form.add_error("llm" if form.cleaned_data.get("llm") else "new_llm", str(exc))
            status = 403
        else:
            if submission.duplicate:
                messages.info(request, "These kernels were already uploaded for this LLM: this is that submission.")
            else:
                messages.success(request, f"Bundle accepted: {submission.kernel_count} kernels queued for evaluation.")
            return redirect(submission)
    if status == 200 and (rejection or form.errors):
        status = 400
    return render(request, "leaderboard/submit.html", {"form": form, "rejection": rejection}, status=status)


@require_GET
def submission_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A submission's page. htmx requests get only the progress fragment, re-polled every 2 s until finished."""
    submission = get_object_or_404(submission_list(), pk=pk)
    context = {
        "submission": submission,
        "progress": submission_progress(submission=submission),
        "poll_seconds": POLL_SECONDS,
    }
    if request.htmx:
        return render(request, "leaderboard/submission_progress.html", context)
    return render(request, "leaderboard/submission_detail.html", context)


@require_GET
def submission_csv(request: HttpRequest, pk: int) -> HttpResponse:
    submission = get_object_or_404(Submission.objects.select_related("llm"), pk=pk)
    response = HttpResponse(submission_results_csv(submission=submission), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-results.csv"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def account(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Shows which API token the user has (its prefix); POST makes a new one, replacing any earlier one. The key is in
    that one answer only (not in a redirect, a message or the session): only its hash is stored."""
    new_key = api_token_create(user=request.user) if request.method == "POST" else None
    context = {
        "token": api_token_for(user=request.user),
        "new_key": new_key,
        "submissions": submission_list().filter(uploader=request.user)[:50],
        "budget": budget_overview(user=request.user),
    }
    return render(request, "leaderboard/account.html", context)
