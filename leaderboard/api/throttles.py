"""Throttle for uploads (scope "submissions"), applied to POST /api/submissions/ only."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle


class SubmissionRateThrottle(UserRateThrottle):
    """Per user (or per IP when anonymous). Reads the rate on every request, so settings overrides apply."""

    scope = "submissions"

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
