"""Writes about API tokens: a user has at most one, stored as a SHA-256 digest; the key is returned once."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import transaction

from catalogue.models import ApiToken
from leaderboard.selectors.tokens import token_digest

PREFIX_LENGTH = 8


@transaction.atomic
def api_token_create(*, user: User) -> str:
    """A new key for `user`, replacing any earlier one (which stops working). Only its digest is stored: show the
    returned key now, it cannot be read back later."""
    key = secrets.token_hex(20)
    ApiToken.objects.filter(user=user).delete()
    ApiToken.objects.create(user=user, prefix=key[:PREFIX_LENGTH], digest=token_digest(key))
    return key
