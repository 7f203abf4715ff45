"""The account page's webhook form (POST /account/webhook/): set, replace the secret, remove; then back to /account/."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from evaluator.services.webhooks import webhook_delete, webhook_set


@require_POST
@login_required
def account_webhook(request: HttpRequest) -> HttpResponse:
    if request.POST.get("delete"):
        webhook_delete(user=request.user)
        messages.success(request, "Webhook removed.")
        return redirect("/account/#webhook")
    try:
        webhook_set(
            user=request.user, url=request.POST.get("url", "")[:500], rotate_secret=bool(request.POST.get("rotate"))
        )
    except ValueError as exc:
        messages.error(request, f"Webhook not set: {exc}")
    else:
        messages.success(request, "Webhook set.")
    return redirect("/account/#webhook")
