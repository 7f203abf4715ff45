"""The board's cache: keys that go stale with the data, a per-process memo, and explicit invalidation."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from catalogue.models import Problem, Submission
from evaluator.models import AuditFlag, Baseline, Evaluation
from evaluator.results_version import results_changed, results_version

# Part of every key: bump it when the cached objects change shape (LeaderboardData gained problem_counts and
# failures), so a shared cache never hands a new process an old pickle.
SCHEMA = (
    "s6"  # s3: baseline rows' `evaluations`, the inactive problems' degenerate status; s4: BoardChoices.default_sets;
    # s5: rows' sol_fraction and vs_compile; s6: cells' sol (the speed-of-light chart)
)
T = TypeVar("T")

_MEMO: OrderedDict[str, object] = OrderedDict()  # key -> value, newest last
_MEMO_SIZE = 64


def cached(key: str, build: Callable[[], T]) -> T:
    """Read-through cache: this process's memo, then Django's cache, then `build()`.

    Keys carry the board version and data fingerprint, so a hit is never stale; the memo saves unpickling the
    board (tens of ms) on every request when the Django cache is local memory or Redis."""
    if key in _MEMO:
        _MEMO.move_to_end(key)
        return _MEMO[key]  # type: ignore[return-value]
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value, cache_ttl())
    _MEMO[key] = value
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return value


def leaderboard_cache_clear() -> None:
    """Invalidate every cached board (call after an evaluation finishes or an audit flag is reviewed)."""
    _MEMO.clear()
    results_changed()


def _fingerprint() -> str:
    """A cheap digest of what the board reads (one query, no scan of the big evaluation table), so a board cached
    in one process goes stale as soon as another process (a Celery worker, the admin) changes the results, even
    without a shared cache and without calling leaderboard_cache_clear().

    New or re-run evaluations raise MAX(evaluation.id) (primary-key index); finishing one moves its submission's
    evaluated/correct counters (evaluator.services); reviews, deactivations and new baselines show in their small
    tables. An in-place edit that bypasses the services is picked up by leaderboard_cache_clear() or the cache TTL.
    """
    ev, sub, flag, problem, base = (m._meta.db_table for m in (Evaluation, Submission, AuditFlag, Problem, Baseline))
    sql = (
        "SELECT e.last, s.n, s.evaluated, s.correct, f.n, f.reviewed, f.confirmed, p.active, b.n, b.measured FROM"
        f" (SELECT MAX(id) last FROM {ev}) e,"
        f" (SELECT COUNT(*) n, SUM(evaluated_count) evaluated, SUM(correct_count) correct FROM {sub}) s,"
        f" (SELECT COUNT(*) n, MAX(reviewed_at) reviewed,"
        f"  SUM(CASE WHEN review_state = %s THEN 1 ELSE 0 END) confirmed FROM {flag}) f,"
        f" (SELECT COUNT(*) active FROM {problem} WHERE active) p,"
        f" (SELECT COUNT(*) n, MAX(measured_at) measured FROM {base}) b"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [AuditFlag.Review.CONFIRMED])
        row = cursor.fetchone()
    return hashlib.sha1(repr(row).encode(), usedforsecurity=False).hexdigest()[:16]


def board_version() -> str:
    """Explicit version (the evaluator's results version, bumped by leaderboard_cache_clear and flag reviews) + data
    fingerprint. Compute it once per request and pass it on: it costs one query."""
    return f"{results_version()}-{_fingerprint()}"


def cache_key(version: str, *parts: object) -> str:
    """A key that goes stale with the data, for anything derived from the board (e.g. charts)."""
    return ":".join(["leaderboard", SCHEMA, version, *map(str, parts)])


def cache_ttl() -> int:
    return getattr(settings, "LEADERBOARD_CACHE_SECONDS", 600)
