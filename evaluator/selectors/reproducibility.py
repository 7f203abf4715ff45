"""What the inspector shows of a verdict's reproducibility: its seeds' commitment, the master once revealed (with
the commands that re-run it), when it will be revealed, and the kernel's verdicts across software stacks."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from evaluator.models import Evaluation, SeedCommitment
from evaluator.selectors.seeds import RevealedSeeds, reveal_after, revealed_from
from evaluator.selectors.stacks import VerdictAtStack, evaluation_stack, kernel_verdict_history


@dataclass(frozen=True, slots=True)
class Reproducibility:
    evaluation_id: int | None
    digest: str | None  # the published commitment (published before the run, else the record's seeds_digest)
    kept: bool  # the site holds the master seed (verdicts older than commit-then-reveal do not)
    revealed: RevealedSeeds | None
    reveal_due: datetime | None  # when it will be revealed at the latest (unless superseded sooner)
    stack: str
    history: list[VerdictAtStack] = field(default_factory=list)
    # When the digest was published, before the run; None for verdicts whose digest came with the verdict.
    published_at: datetime | None = None
    # The finished record commits to the digest published before the run (None: not finished, or no such digest).
    record_matches: bool | None = None

    @property
    def stacks(self) -> int:
        return len({h.stack for h in self.history})


def verdict_reproducibility(*, kernel_id: int, evaluation: Evaluation | None) -> Reproducibility:
    history = kernel_verdict_history(kernel_id=kernel_id)
    if evaluation is None:
        return Reproducibility(None, None, False, None, None, "", history)
    env = (evaluation.result or {}).get("environment") or {}
    row = SeedCommitment.objects.filter(evaluation_id=evaluation.pk).first()  # one query: kept, and revealed?
    kept = row is not None
    due = evaluation.finished_at + reveal_after() if kept and evaluation.finished_at else None
    published_at = row.published_at if row is not None else None
    recorded = env.get("seeds_digest")
    return Reproducibility(
        evaluation_id=evaluation.pk,
        digest=row.digest if row is not None and published_at else recorded,
        kept=kept,
        revealed=revealed_from(row) if row is not None else None,
        reveal_due=due,
        stack=evaluation_stack(evaluation),
        history=history,
        published_at=published_at,
        record_matches=recorded == row.digest if row is not None and published_at and recorded else None,
    )
