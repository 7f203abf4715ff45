"""The results version: a counter in Django's cache that every reader caching evaluation results keys on (the
leaderboard's boards). The evaluator bumps it when results change in ways a reader cannot see cheaply, so it
never needs to know who caches what."""

from __future__ import annotations

from typing import cast

from django.core.cache import cache

# The key's name predates this module; keeping it keeps shared caches consistent across a deployment's upgrade.
RESULTS_VERSION_KEY = "leaderboard:version"


def results_changed() -> None:
    """Bump the results version, so every board cached against an older one goes stale (after a flag review)."""
    try:
        cache.incr(RESULTS_VERSION_KEY)
    except ValueError:  # the key is missing (first call, or evicted)
        cache.set(RESULTS_VERSION_KEY, 1, None)


def results_version() -> int:
    """The current results version (0 before the first change)."""
    return cast(int, cache.get_or_set(RESULTS_VERSION_KEY, 0, None))
