"""Writes about API tokens (DRF's authtoken): shown and (re)created on the account page."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from rest_framework.authtoken.models import Token


@transaction.atomic
def api_token_create(*, user: AbstractBaseUser, regenerate: bool = False) -> Token:
    """The user's token, created if missing; `regenerate` replaces an existing one (the old one stops working)."""
    if regenerate:
        Token.objects.filter(user=user).delete()
    token, _ = Token.objects.get_or_create(user=user)
    return token
