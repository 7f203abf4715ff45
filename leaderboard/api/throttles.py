"""Throttles. Every count lives in the shared "throttle" cache (settings CACHES: a database table or Redis), so a
limit holds across web processes. Uploads (scope "submissions") count API and web-form uploads together."""

from __future__ import annotations

from typing import Any

from django.core.cache import BaseCache, caches
from rest_framework import throttling
from rest_framework.settings import api_settings


class SharedCacheMixin:
    """The shared cache and the current rates, both looked up on use (DRF binds them when the class is defined)."""

    scope: str | None

    @property
    def cache(self) -> BaseCache:
        return caches["throttle"]

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class AnonRateThrottle(SharedCacheMixin, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(SharedCacheMixin, throttling.UserRateThrottle):
    pass


class SubmissionRateThrottle(SharedCacheMixin, throttling.UserRateThrottle):
    """Per user (or per address when anonymous)."""

    scope = "submissions"


def client_ip(request: Any) -> str:
    """The client's address as the throttles see it (REMOTE_ADDR, or X-Forwarded-For through NUM_PROXIES trusted
    proxies); the login lockout uses it too (settings AXES_CLIENT_IP_CALLABLE)."""
    return throttling.BaseThrottle().get_ident(request)


def upload_allowed(request: Any) -> bool:
    """For the web upload form: records one upload attempt and says whether it is within the "submissions" rate,
    the same count the API's uploads use (a Django request has what the throttle reads: user and META)."""
    return SubmissionRateThrottle().allow_request(request, None)
