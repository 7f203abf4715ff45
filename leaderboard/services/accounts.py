"""Self-service sign-up: a visitor makes an account (and then a token on /account/) without shell access."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User


def user_sign_up(*, username: str, password: str) -> User:
    """Create an account. With SIGNUP_REQUIRES_APPROVAL it starts inactive: it can neither log in nor upload (nor
    use a token) until a staff member ticks "active" in the admin."""
    return get_user_model().objects.create_user(
        username=username, password=password, is_active=not settings.SIGNUP_REQUIRES_APPROVAL
    )
