"""Reads about master seeds: the digest published when an evaluation was queued, the master the worker hands to
the harness, and the revealed ones the inspector shows and `manage.py reproduce` needs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from evaluator.models import Evaluation, SeedCommitment


def reveal_after() -> timedelta:
    """How long a kept master seed stays secret at most (SEEDS_REVEAL_AFTER_DAYS; sooner once superseded)."""
    return timedelta(days=float(getattr(settings, "SEEDS_REVEAL_AFTER_DAYS", 30)))


@dataclass(frozen=True, slots=True)
class RevealedSeeds:
    """A revealed master seed with the commands that re-run its verdict."""

    evaluation_id: int
    master: str
    digest: str
    scheme: str
    revealed_at: datetime

    @property
    def command(self) -> str:
        return f".venv/bin/python manage.py reproduce {self.evaluation_id}"

    @property
    def harness_command(self) -> str:
        return (
            "python -m evaluator.harness PROBLEM.py KERNEL.py --device cpu|cuda "
            f"--seeds {self.master} --compare RECORD.json"
        )


def revealed_seeds(*, evaluation_id: int) -> RevealedSeeds | None:
    """The evaluation's master seed if it has been revealed, else None (secret, or none was kept)."""
    row = SeedCommitment.objects.filter(evaluation_id=evaluation_id, revealed_at__isnull=False).first()
    return revealed_from(row) if row is not None else None


def revealed_from(row: SeedCommitment) -> RevealedSeeds | None:
    """The revealed seeds of a commitment row already read, or None while they are secret."""
    if row.revealed_at is None:
        return None
    return RevealedSeeds(row.evaluation_id, row.master, row.digest, row.scheme, row.revealed_at)


def master_seed(*, evaluation: Evaluation, revealed_only: bool = True) -> str | None:
    """The master seed of `evaluation` (only a revealed one unless `revealed_only` is False: staff on the server)."""
    rows = SeedCommitment.objects.filter(evaluation_id=evaluation.pk)
    if revealed_only:
        rows = rows.filter(revealed_at__isnull=False)
    return rows.values_list("master", flat=True).first()


def published_commitment(*, evaluation_id: int) -> SeedCommitment | None:
    """The commitment the site published when it queued `evaluation_id` (before the run), or None: an evaluation
    queued before commitments were published at queue time, whose harness drew its own master."""
    return SeedCommitment.objects.filter(evaluation_id=evaluation_id, published_at__isnull=False).first()


def submission_digests(*, submission_id: int) -> list[dict[str, int | str]]:
    """The digests published when a submission's current evaluations were queued, before they run (the upload's
    answer names them): [{"evaluation", "kernel", "seeds_digest"}], by evaluation id."""
    rows = (
        SeedCommitment.objects.filter(
            evaluation__kernel__submission_id=submission_id, evaluation__is_current=True, published_at__isnull=False
        )
        .order_by("evaluation_id")
        .values_list("evaluation_id", "evaluation__kernel_id", "digest")
    )
    return [{"evaluation": pk, "kernel": kernel, "seeds_digest": digest} for pk, kernel, digest in rows]


def published_digest(evaluation: Evaluation) -> str | None:
    """The digest a reader checks `evaluation` against: the one published before the run, else (older verdicts)
    the record's own `environment.seeds_digest`."""
    row = published_commitment(evaluation_id=evaluation.pk)
    if row is not None:
        return row.digest
    value = ((evaluation.result or {}).get("environment") or {}).get("seeds_digest")
    return value if isinstance(value, str) else None
