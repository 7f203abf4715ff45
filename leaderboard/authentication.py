"""DRF authentication by `Authorization: Token <key>`, against the hashed tokens of catalogue.models.ApiToken."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from leaderboard.selectors.tokens import api_token_user


class HashedTokenAuthentication(TokenAuthentication):
    """DRF's header parsing (keyword "Token"); the key is looked up by its SHA-256, never stored in clear."""

    def authenticate_credentials(self, key: str) -> tuple[Any, None]:
        user = api_token_user(key=key)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return user, None
