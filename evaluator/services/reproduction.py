"""Re-run a verdict from its record and its revealed master seed (`manage.py reproduce EVALUATION_ID`).

The problem and kernel sources, the hardware label and the recorded options come from the database; every secret
seed derives from the revealed master (evaluator/harness/seeds.py), so on the same hardware and software the
correctness gate meets the same inputs and gives the same per-distribution figures. Nothing is stored: a
reproduction is not an evaluation, and its seeds, revealed already, never serve one.

The comparison (evaluator/harness/orchestrator/reproduce.py) also checks what the verdict stands on, as stored
now: the columns the board and the API show against the record, the stored master against the digest published
before the run, and the kernel's and the problem's sha256 against the record's and the sources run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from evaluator.harness import seeds
from evaluator.harness.orchestrator import reproduce
from evaluator.host import with_driver
from evaluator.models import Evaluation, SeedCommitment
from evaluator.selectors.seeds import master_seed
from evaluator.services.evaluations import device_for
from evaluator.services.queues import time_limits

# The recorded options a reproduction must repeat (environment.options of the record); timing knobs are the
# harness defaults of the recorded `quick` mode.
REPEATED_OPTIONS = ("quick", "compile_baseline", "randomise_params", "verified_trials")


class NotReproducible(Exception):
    """The evaluation has no record or no (revealed) master seed."""


@dataclass(frozen=True, slots=True)
class Reproduction:
    evaluation_id: int
    original: dict[str, Any]
    again: dict[str, Any]
    # What the site published about the verdict: its columns and rows, the seeds' digest, the sources' hashes.
    published: reproduce.Published = field(default_factory=reproduce.Published)

    @property
    def comparison(self) -> reproduce.Comparison:
        return reproduce.compare(self.original, self.again, self.published)

    @property
    def differences(self) -> list[reproduce.Difference]:
        return self.comparison.differences

    @property
    def environment_differences(self) -> list[reproduce.Difference]:
        return self.comparison.environment

    def report(self) -> str:
        return reproduce.report(self.original, self.again, self.published)


def published_verdict(evaluation: Evaluation, *, master: str | None) -> reproduce.Published:
    """What the board, the API and the dataset show of `evaluation` (its columns and distribution rows), the
    digest published for its seeds, and the sources' published hashes, as they are stored now."""
    columns = {
        name: getattr(evaluation, name)
        for name in ("result_status", "correct", "standard_correct", "speedup", "speedup_ci_low", "speedup_ci_high")
    } | {"speedup_fp32": evaluation.speedup_fp32, "memory_ratio": evaluation.memory_ratio}
    rows = list(evaluation.distributions.values("name", *reproduce.SHOWN_DISTRIBUTION))
    commitment = SeedCommitment.objects.filter(evaluation_id=evaluation.pk).first()
    return reproduce.Published(
        shown=reproduce.shown_from_columns(columns, rows),
        seeds_digest=commitment.digest if commitment is not None else None,
        master=master,
        kernel_sha256=evaluation.kernel.sha256,
        problem_sha256=evaluation.kernel.problem.sha256,
    )


def reproduction_arguments(
    *, evaluation: Evaluation, master: str, device: str | None = None, python: str | None = None
) -> dict[str, Any]:
    """Keyword arguments for `evaluator.runner.run_evaluation` that repeat `evaluation` with seeds from `master`."""
    record = evaluation.result or {}
    recorded = (record.get("environment") or {}).get("options") or {}
    options = {k: recorded[k] for k in REPEATED_OPTIONS if k in recorded}
    # Built from source: a cached build is what the evaluation being checked left, not independent evidence.
    options |= {"hardware": evaluation.hardware, "seeds": seeds.check(master), "build_from_source": True}
    return {
        "problem_source": evaluation.kernel.problem.source,
        "kernel_source": evaluation.kernel.source,
        "device": device or device_for(evaluation.hardware),
        "timeout": time_limits().harness,
        "work_root": settings.EVALUATOR_WORK_DIR,
        "compile_cache_dir": settings.EVALUATOR_COMPILE_CACHE_DIR,
        "python": python or settings.EVALUATOR_PYTHON or None,
        "require_sandbox": settings.EVALUATOR_REQUIRE_SANDBOX,
        "options": options,
    }


def evaluation_reproduce(
    *, evaluation_id: int, device: str | None = None, python: str | None = None, unrevealed: bool = False
) -> Reproduction:
    """Run the harness again on `evaluation_id`'s kernel and problem with its master seed; compare the records.
    `unrevealed`: use a master seed not yet revealed (staff on the server only; the command's --unrevealed)."""
    from evaluator import runner

    evaluation = Evaluation.objects.select_related("kernel__problem").filter(pk=evaluation_id).first()
    if evaluation is None or evaluation.status != Evaluation.Status.DONE or not evaluation.result:
        raise NotReproducible(f"evaluation {evaluation_id} has no verdict to reproduce")
    master = master_seed(evaluation=evaluation, revealed_only=not unrevealed)
    if master is None:
        raise NotReproducible(
            f"evaluation {evaluation_id}'s seeds are not revealed yet (revealed once superseded or "
            f"SEEDS_REVEAL_AFTER_DAYS old) or were never kept (verdicts older than commit-then-reveal)"
        )
    again = runner.run_evaluation(
        **reproduction_arguments(evaluation=evaluation, master=master, device=device, python=python)
    )
    again.pop(seeds.RECORD_KEY, None)
    again = with_driver(again, device=device or device_for(evaluation.hardware))  # as evaluation_finish adds it
    published = published_verdict(evaluation, master=master)
    return Reproduction(evaluation_id=evaluation_id, original=evaluation.result, again=again, published=published)
