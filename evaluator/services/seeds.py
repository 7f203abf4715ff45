"""Commit, then reveal: the master seed an evaluation's secret seeds derived from (evaluator/harness/seeds.py).

The harness hands the master back beside its record (`seeds.RECORD_KEY`); `seeds_take` takes it out before the
record is stored, `seeds_commit` keeps it in its own row (SeedCommitment) once the result is stored, and
`seeds_reveal_due` reveals it once its evaluation is superseded or SEEDS_REVEAL_AFTER_DAYS old. The published
`environment.seeds_digest` (sha256 of the master's hex text) proves the seeds were fixed before the kernel ran.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from evaluator.harness import seeds
from evaluator.models import Evaluation, SeedCommitment
from evaluator.selectors.seeds import reveal_after

log = logging.getLogger(__name__)


def seeds_take(record: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A copy of `record` without the master seed, and the master (None when the harness sent none or a bad one)."""
    if not isinstance(record, dict) or seeds.RECORD_KEY not in record:
        return record, None
    record = dict(record)
    value = record.pop(seeds.RECORD_KEY)
    try:
        return record, seeds.check(value) if isinstance(value, str) else None
    except ValueError:
        return record, None


def seeds_used(master: str | None) -> bool:
    """True when `master` already served an evaluation: a master seed serves one only, revealed or not."""
    return bool(master) and SeedCommitment.objects.filter(digest=seeds.digest(master or "")).exists()


def seeds_commit(*, evaluation: Evaluation, master: str | None, record: dict[str, Any]) -> SeedCommitment | None:
    """Keep the master seed of a stored result (inside the finishing transaction). Nothing is kept when the record
    does not commit to this master (its seeds_digest differs): such seeds could not be checked by anyone."""
    if not master:
        return None
    env = record.get("environment") or {}
    digest = seeds.digest(master)
    if env.get("seeds_digest") != digest:
        log.warning("evaluation %s: the record's seeds_digest does not commit to its master seed", evaluation.pk)
        return None
    return SeedCommitment.objects.create(
        evaluation_id=evaluation.pk, master=master, digest=digest, scheme=str(env.get("seeds_scheme") or "")
    )


def seeds_reveal_due(*, now: datetime | None = None) -> int:
    """Reveal every master seed whose evaluation is superseded (no longer current) or finished at least
    SEEDS_REVEAL_AFTER_DAYS ago; returns how many were revealed now. Run by beat (evaluator.reveal_seeds)."""
    now = now or timezone.now()
    due = Q(evaluation__is_current=False) | Q(evaluation__finished_at__lte=now - reveal_after())
    return SeedCommitment.objects.filter(due, revealed_at__isnull=True).update(revealed_at=now)


def seeds_reveal(*, evaluation_id: int, now: datetime | None = None) -> bool:
    """Reveal one evaluation's master seed now (staff, in the admin); False when it has none."""
    rows = SeedCommitment.objects.filter(evaluation_id=evaluation_id, revealed_at__isnull=True)
    return (
        rows.update(revealed_at=now or timezone.now()) == 1
        or SeedCommitment.objects.filter(evaluation_id=evaluation_id).exists()
    )
