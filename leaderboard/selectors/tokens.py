"""Reads about API tokens: who a presented key belongs to."""

from __future__ import annotations

import hashlib

from django.contrib.auth.models import User

from catalogue.models import ApiToken


def token_digest(key: str) -> str:
    """What is stored for a key. Keys are 160 random bits, so a plain SHA-256 (no salt, no stretching) is enough."""
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_user(*, key: str) -> User | None:
    """The user whose token has this key, or None. Looks the key up by its digest: nothing stored is a key."""
    token = ApiToken.objects.select_related("user").filter(digest=token_digest(key)).first()
    return token.user if token else None


def api_token_for(*, user: User) -> ApiToken | None:
    """The user's token (prefix and creation date only: the key is not stored)."""
    return ApiToken.objects.filter(user=user).first()
