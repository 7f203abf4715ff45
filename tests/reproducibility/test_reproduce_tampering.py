"""`manage.py reproduce` catches tampering with what a verdict stands on, names the cause, and exits with an error
whenever a verdict differs (with or without --strict): an edited column of the board and the API, a stored master
seed that is not the published digest's, a swapped kernel source, a record edited to flip its verdict. Each case
evaluates a demo kernel with the real harness on the CPU, tampers with the database, then reproduces it."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.models import Kernel, Problem
from evaluator.harness import seeds
from evaluator.models import DistributionResult, Evaluation, SeedCommitment
from evaluator.services.evaluations import evaluations_enqueue
from evaluator.tasks.evaluation import evaluate_kernel
from tests.factories import KernelFactory, SubmissionFactory
from tests.pipeline.helpers import demo_kernel

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def evaluated(demo_problems, sent, django_capture_on_commit_callbacks) -> Evaluation:
    """The shape-guard hack (demo L1/1 sample 1: passes D1-D3, fails D4), queued as an upload is (its digest
    published before the run) and evaluated by the real harness."""
    problem = Problem.objects.get(problem_set="demo", level=1, problem_id=1)
    kernel = KernelFactory(
        problem=problem,
        source=demo_kernel(1, 1, 1),
        sample=1,
        submission=SubmissionFactory(hardware="cpu", problem_set="demo", status="received", kernel_count=1),
    )
    evaluation = Evaluation.objects.create(kernel=kernel, hardware="cpu")
    evaluations_enqueue(evaluations=[evaluation])
    evaluate_kernel.apply(args=[evaluation.pk])
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.DONE and evaluation.correct is False, evaluation.error
    return evaluation


def _reproduce(evaluation: Evaluation, *flags: str) -> tuple[dict, CommandError | None]:
    out = io.StringIO()
    try:
        call_command("reproduce", evaluation.pk, "--unrevealed", "--json", *flags, stdout=out)
    except CommandError as exc:
        return json.loads(out.getvalue()), exc
    return json.loads(out.getvalue()), None


def test_an_honest_verdict_reproduces_identically(evaluated):
    result, error = _reproduce(evaluated, "--strict")
    assert error is None and result["identical"] and result["tampered"] == [], result["summary"]


def test_an_edited_column_of_the_board_is_caught(evaluated):
    """The board and the API read the columns, not the record: flipping them left `reproduce --strict` identical."""
    Evaluation.objects.filter(pk=evaluated.pk).update(correct=True, speedup=42.0)
    DistributionResult.objects.filter(evaluation=evaluated, name="D4").update(passed=True)
    result, error = _reproduce(evaluated)
    assert error is not None and result["verdict_differs"]
    edited = {d["figure"]: d for d in result["tampered"]}
    assert set(edited) == {"shown correct", "shown speedup", "shown D4.passed"}
    assert (edited["shown correct"]["before"], edited["shown correct"]["after"]) == (False, True)
    assert all("stored column was edited" in d["cause"] for d in edited.values())
    assert result["differences"] == []  # the record and the reproduction agree: only the columns were edited


def test_a_stored_master_that_is_not_the_published_digests_is_caught(evaluated):
    commitment = SeedCommitment.objects.get(evaluation=evaluated)
    SeedCommitment.objects.filter(pk=commitment.pk).update(master=seeds.draw())
    result, error = _reproduce(evaluated)
    assert error is not None and result["verdict_differs"]
    (tamper,) = [d for d in result["tampered"] if d["figure"] == "seeds: digest of the stored master"]
    assert tamper["before"] == commitment.digest and "does not match the digest published" in tamper["cause"]
    # Other inputs: the error figures move, and each says why.
    assert result["differences"] and all("does not match the digest" in d["cause"] for d in result["differences"])


def test_a_swapped_kernel_source_is_caught_and_named(evaluated):
    honest = demo_kernel(1, 1, 0)  # a correct kernel in place of the hack that was evaluated
    Kernel.objects.filter(pk=evaluated.kernel_id).update(source=honest)
    result, error = _reproduce(evaluated)
    assert error is not None and result["verdict_differs"]
    (swap,) = [d for d in result["tampered"] if d["figure"] == "kernel_sha256"]
    assert swap["before"] == evaluated.kernel.sha256 and "swapped kernel source" in swap["cause"]
    figures = {d["figure"]: d for d in result["differences"]}
    assert figures["correct"]["before"] is False and figures["correct"]["after"] is True
    assert "swapped kernel source" in figures["D4.passed"]["cause"]


def test_a_flipped_verdict_fails_without_strict(evaluated):
    """A record edited with its columns (consistently) to turn the failing D4 into a pass: the reproduction
    disagrees, and `reproduce` exits with an error without --strict."""
    record = evaluated.result
    record["correct"] = True
    record["distributions"][3]["passed"] = True
    Evaluation.objects.filter(pk=evaluated.pk).update(result=record, correct=True)
    DistributionResult.objects.filter(evaluation=evaluated, name="D4").update(passed=True)
    result, error = _reproduce(evaluated)
    assert error is not None and "the verdict differs" in str(error)
    assert result["tampered"] == []  # consistent edits: only the re-run can tell
    flipped = {d["figure"]: d for d in result["differences"] if d["verdict"]}
    assert {"correct", "D4.passed"} <= set(flipped)
    assert "the stored record was edited" in flipped["correct"]["cause"]
