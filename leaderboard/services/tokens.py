"""Writes about API tokens: a user has at most one, stored as a SHA-256 digest; the key is returned once."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from catalogue.models import ApiToken

PREFIX_LENGTH = 8


def token_digest(key: str) -> str:
    """What is stored for a key. Keys are 160 random bits, so a plain SHA-256 (no salt, no stretching) is enough."""
    return hashlib.sha256(key.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, user: AbstractBaseUser) -> str:
    """A new key for `user`, replacing any earlier one (which stops working). Only its digest is stored: show the
    returned key now, it cannot be read back later."""
    key = secrets.token_hex(20)
    ApiToken.objects.filter(user=user).delete()
    ApiToken.objects.create(user=user, prefix=key[:PREFIX_LENGTH], digest=token_digest(key))
    return key
