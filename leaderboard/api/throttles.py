"""Throttles. Every count lives in the shared "throttle" cache (settings CACHES: a database table or Redis), so a
limit holds across web processes. Uploads (scope "submissions") count API and web-form uploads together."""

from __future__ import annotations

from collections.abc import Mapping
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

    @cache.setter
    def cache(self, value: BaseCache) -> None:
        raise AttributeError("a throttle's cache is settings CACHES['throttle']")

    def get_rate(self) -> str | None:
        rates: Mapping[str, Any] = api_settings.DEFAULT_THROTTLE_RATES  # "100/hour" strings (the stubs say numbers)
        return rates.get(self.scope) if self.scope is not None else None


class AnonRateThrottle(SharedCacheMixin, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(SharedCacheMixin, throttling.UserRateThrottle):
    pass


class SubmissionRateThrottle(SharedCacheMixin, throttling.UserRateThrottle):
    """Per user (or per address when anonymous)."""

    scope = "submissions"


NO_VIEW: Any = None  # a throttle asked outside a view: SimpleRateThrottle.allow_request never reads the view


def client_ip(request: Any) -> str:
    """The client's address as the throttles see it (REMOTE_ADDR, or X-Forwarded-For through NUM_PROXIES trusted
    proxies); the login lockout uses it too (settings AXES_CLIENT_IP_CALLABLE)."""
    return throttling.BaseThrottle().get_ident(request)


def upload_allowed(request: Any) -> bool:
    """For the web upload form: records one upload attempt and says whether it is within the "submissions" rate,
    the same count the API's uploads use (a Django request has what the throttle reads: user and META)."""
    return SubmissionRateThrottle().allow_request(request, NO_VIEW)


class SignupRateThrottle(SharedCacheMixin, throttling.AnonRateThrottle):
    """Accounts made per address (scope "signup", SIGNUP_THROTTLE): a burst of sign-ups from one address stops."""

    scope = "signup"


def signup_allowed(request: Any) -> bool:
    """For the sign-up page: records one account creation from this address and says whether it is within the rate."""
    return SignupRateThrottle().allow_request(request, NO_VIEW)


def login_failure_limit(request: Any, credentials: dict[str, Any] | None) -> int:
    """django-axes' limit for this attempt (settings AXES_FAILURE_LIMIT). Axes compares one count, the largest over
    its lockout parameters, which is the address's count (every failure of the pair is one of the address's too):
    so the limit is LOGIN_FAILURE_LIMIT once this username and address pair has had that many failures, else
    LOGIN_ADDRESS_FAILURE_LIMIT. One password tried on many usernames is stopped by the second."""
    from axes.helpers import get_client_username
    from axes.models import AccessAttempt
    from django.conf import settings
    from django.db.models import Sum

    pair_limit = int(settings.LOGIN_FAILURE_LIMIT)
    username = get_client_username(request, credentials)
    address = getattr(request, "axes_ip_address", None) or client_ip(request)
    failures = (
        AccessAttempt.objects.filter(username=username, ip_address=address).aggregate(n=Sum("failures_since_start"))[
            "n"
        ]
        or 0
    )
    return pair_limit if failures >= pair_limit else int(settings.LOGIN_ADDRESS_FAILURE_LIMIT)
