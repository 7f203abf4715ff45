"""Commit, then reveal: the master seed an evaluation's secret seeds derived from (evaluator/harness/seeds.py).

`seeds_publish` draws the master when the evaluation is queued and keeps it in its own row (SeedCommitment), whose
digest is published at once (the upload's answer, the API, the inspector), so the seeds are fixed before the
kernel runs; the worker hands the master to the harness (the `seeds` option). When the evaluation finishes,
`seeds_refusal` checks the record's `environment.seeds_digest` against the digest published before the run: a
record that commits to other seeds is refused (the evaluation fails as an infrastructure error, with the reason).
`seeds_reveal_due` reveals the master once its evaluation is superseded or SEEDS_REVEAL_AFTER_DAYS old.

Evaluations queued before commitments were published at queue time have no row yet: their harness draws the
master and hands it back beside the record (`seeds.RECORD_KEY`); `seeds_take` takes it out before the record is
stored and `seeds_commit` keeps it, its digest published with the verdict (the inspector says so).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from evaluator.harness import seeds
from evaluator.harness.record import Record
from evaluator.models import Evaluation, SeedCommitment
from evaluator.selectors.seeds import reveal_after

log = logging.getLogger(__name__)


def seeds_take(record: Record) -> str | None:
    """Take the master seed out of `record` (it travels beside the record, in its `extra`, never to be stored) and
    return it (None when the harness sent none or a bad one)."""
    value = record.extra.pop(seeds.RECORD_KEY, None)
    try:
        return seeds.check(value) if isinstance(value, str) else None
    except ValueError:
        return None


def seeds_publish(*, evaluation_ids: list[int]) -> None:
    """Draw a fresh master seed for each queued evaluation that has none and publish its digest now (inside the
    queueing transaction): the seeds are fixed before any worker can claim the evaluation."""
    have = set(SeedCommitment.objects.filter(evaluation_id__in=evaluation_ids).values_list("evaluation_id", flat=True))
    now = timezone.now()
    rows = []
    for evaluation_id in dict.fromkeys(evaluation_ids):
        if evaluation_id in have:
            continue  # a retry or a re-send keeps the seeds published when it was first queued
        master = seeds.draw()
        rows.append(
            SeedCommitment(
                evaluation_id=evaluation_id,
                master=master,
                digest=seeds.digest(master),
                scheme=seeds.SCHEME,
                published_at=now,
            )
        )
    SeedCommitment.objects.bulk_create(rows, ignore_conflicts=True)


def seeds_refusal(*, published: SeedCommitment, master: str | None, record: Record) -> str | None:
    """Why a finished record cannot stand for an evaluation whose digest was published before its run, or None.

    The record must commit to the published digest (`environment.seeds_digest`), and a master the harness handed
    back must be the published one. A record without a digest is the site's own (a timeout, a harness that died
    while the kernel ran): it is taken only when it is not a correct verdict, since it shows no seeded figure."""
    digest = record.environment.seeds_digest
    if digest is None and record.correct is not True:
        return None
    if digest != published.digest:
        return (
            "refused: the record commits to other seeds than the digest published before the run "
            f"(published {published.digest}, record {digest})"
        )
    if master is not None and master != published.master:
        return "refused: the harness ran with another master seed than the one published before the run"
    return None


def seeds_used(master: str | None) -> bool:
    """True when `master` already served an evaluation: a master seed serves one only, revealed or not."""
    return bool(master) and SeedCommitment.objects.filter(digest=seeds.digest(master or "")).exists()


def seeds_commit(*, evaluation: Evaluation, master: str | None, record: Record) -> SeedCommitment | None:
    """Keep the master seed of a stored result (inside the finishing transaction). Nothing is kept when the record
    does not commit to this master (its seeds_digest differs): such seeds could not be checked by anyone."""
    if not master:
        return None
    digest = seeds.digest(master)
    if record.environment.seeds_digest != digest:
        log.warning("evaluation %s: the record's seeds_digest does not commit to its master seed", evaluation.pk)
        return None
    return SeedCommitment.objects.create(
        evaluation_id=evaluation.pk, master=master, digest=digest, scheme=str(record.environment.seeds_scheme or "")
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
