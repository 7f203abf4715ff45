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
    digest: str | None  # the published commitment (the record's seeds_digest)
    kept: bool  # the site holds the master seed (verdicts older than commit-then-reveal do not)
    revealed: RevealedSeeds | None
    reveal_due: datetime | None  # when it will be revealed at the latest (unless superseded sooner)
    stack: str
    history: list[VerdictAtStack] = field(default_factory=list)

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
    return Reproducibility(
        evaluation_id=evaluation.pk,
        digest=env.get("seeds_digest"),
        kept=kept,
        revealed=revealed_from(row) if row is not None else None,
        reveal_due=due,
        stack=evaluation_stack(evaluation),
        history=history,
    )
