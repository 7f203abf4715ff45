"""Database constraints of the data model: they hold on SQLite and PostgreSQL alike."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from catalogue.models import LLM, Kernel, Problem, Submission
from evaluator.models import AuditFlag, Baseline, DistributionResult, Evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def kernel() -> Kernel:
    llm = LLM.objects.create(name="gpt-test")
    problem = Problem.objects.create(problem_set="t", level=1, problem_id=1, name="ReLU", source="x", sha256="a")
    sub = Submission.objects.create(llm=llm, problem_set="t", hardware="cpu", kernel_count=1)
    return Kernel.objects.create(submission=sub, llm=llm, problem=problem, sample=0, source="y", sha256="b")


def violates(fn) -> bool:
    try:
        with transaction.atomic():
            fn()
    except IntegrityError:
        return True
    return False


def test_llm_names_are_unique():
    LLM.objects.create(name="a")
    assert violates(lambda: LLM.objects.create(name="a"))


def test_problem_source_is_unique_per_set_and_only_one_latest(kernel):
    p = kernel.problem
    assert violates(
        lambda: Problem.objects.create(problem_set="t", level=1, problem_id=1, name="n", source="z", sha256="a")
    )
    # A second version must not also be latest ...
    assert violates(
        lambda: Problem.objects.create(
            problem_set="t", level=1, problem_id=1, name="n", source="z", sha256="c", is_latest=True
        )
    )
    # ... but is fine once the old one is not, and the same source may exist in another problem set.
    Problem.objects.create(problem_set="t", level=1, problem_id=1, name="n", source="z", sha256="c", is_latest=False)
    Problem.objects.create(problem_set="other", level=1, problem_id=1, name="n", source="x", sha256=p.sha256)


def test_inactive_problem_needs_a_reason():
    assert violates(
        lambda: Problem.objects.create(
            problem_set="t", level=2, problem_id=1, name="n", source="s", sha256="s", active=False
        )
    )
    Problem.objects.create(
        problem_set="t",
        level=2,
        problem_id=1,
        name="n",
        source="s",
        sha256="s",
        active=False,
        inactive_reason="constant output",
    )


def test_level_must_be_positive():
    assert violates(
        lambda: Problem.objects.create(problem_set="t", level=0, problem_id=1, name="n", source="s", sha256="s")
    )


def test_kernel_sample_is_unique_within_a_submission(kernel):
    assert violates(
        lambda: Kernel.objects.create(
            submission=kernel.submission, llm=kernel.llm, problem=kernel.problem, sample=0, source="z", sha256="z"
        )
    )


def test_submission_counts_are_bounded(kernel):
    sub = kernel.submission
    sub.evaluated_count = 2
    assert violates(sub.save)


def test_only_one_current_evaluation_per_kernel_and_hardware(kernel):
    Evaluation.objects.create(kernel=kernel, hardware="cpu")
    assert violates(lambda: Evaluation.objects.create(kernel=kernel, hardware="cpu"))
    Evaluation.objects.create(kernel=kernel, hardware="h200")
    Evaluation.objects.create(kernel=kernel, hardware="cpu", is_current=False)


def test_speedup_must_be_positive(kernel):
    assert violates(lambda: Evaluation.objects.create(kernel=kernel, hardware="cpu", speedup=0.0))


def test_one_distribution_row_per_name(kernel):
    ev = Evaluation.objects.create(kernel=kernel, hardware="cpu")
    DistributionResult.objects.create(evaluation=ev, name="D1", passed=True, trials=2)
    assert violates(lambda: DistributionResult.objects.create(evaluation=ev, name="D1"))


def test_one_baseline_per_problem_hardware_torch_and_precision(kernel):
    kw = dict(problem=kernel.problem, hardware="h200", torch_version="2.11", precision="tf32")
    Baseline.objects.create(median_ms=1.0, **kw)
    assert violates(lambda: Baseline.objects.create(median_ms=2.0, **kw))
    assert violates(lambda: Baseline.objects.create(median_ms=0.0, **{**kw, "precision": "fp32"}))


def test_audit_flag_confidence_is_a_probability(kernel):
    kw = dict(kernel=kernel, source="judge", source_name="j", verdict="hack")
    assert violates(lambda: AuditFlag.objects.create(confidence=1.5, **kw))
    AuditFlag.objects.create(confidence=0.9, **kw)


def test_deleting_a_problem_with_kernels_is_refused(kernel):
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        kernel.problem.delete()
