"""Sign-up page (/accounts/signup/). Logging in and out are Django's own views (config/urls.py)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from leaderboard.api.throttles import signup_allowed
from leaderboard.services.accounts import user_sign_up


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Username and password; then straight to the account page, where the API token is made."""
    if request.user.is_authenticated:
        return redirect("leaderboard:account")
    form: UserCreationForm[User] = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and not signup_allowed(request):
        # Counted per address in the shared throttle cache (SIGNUP_THROTTLE): no burst of throwaway accounts.
        form.add_error(None, "Too many accounts made from this address: try again in an hour.")
        context = {"form": form, "approval": settings.SIGNUP_REQUIRES_APPROVAL}
        return render(request, "registration/signup.html", context, status=429)
    if request.method == "POST" and form.is_valid():
        user = user_sign_up(username=form.cleaned_data["username"], password=form.cleaned_data["password1"])
        if not user.is_active:
            messages.info(request, "Account created. A staff member must approve it before you can log in and upload.")
            return redirect("login")
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, "Welcome! Create an API token below to upload from the command line.")
        return redirect("leaderboard:account")
    context = {"form": form, "approval": settings.SIGNUP_REQUIRES_APPROVAL}
    return render(request, "registration/signup.html", context, status=400 if form.errors else 200)
