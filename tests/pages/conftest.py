"""Fixtures for the page tests: a clean cache per test and a helper that records one evaluated sample."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from evaluator.models import AuditFlag
from leaderboard.selectors.ranking import leaderboard_cache_clear
from tests.factories import (
    KERNEL_SOURCE,
    AuditFlagFactory,
    DistributionResultFactory,
    EvaluationFactory,
    KernelFactory,
    LLMFactory,
    SubmissionFactory,
)


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    leaderboard_cache_clear()  # also this process's memo of computed boards
    yield
    cache.clear()
    leaderboard_cache_clear()


@pytest.fixture
def add_sample(db):
    """add_sample(llm_name, problem, sample, speedup=..., correct=..., ...) -> Evaluation.

    One submission per (LLM, hardware); each sample its own source unless `source=` is given; `hack=True` adds a
    confirmed judge flag; `d1`/`hidden_fail` write D1-D4 rows.
    """
    submissions = {}

    def add(
        llm_name,
        problem,
        sample=0,
        *,
        speedup=1.0,
        correct=True,
        fp32=None,
        memory=1.0,
        standard=None,
        hardware="h200",
        hack=False,
        d1=None,
        hidden_fail=False,
        source=None,
        **extra,
    ):
        llm = LLMFactory(name=llm_name)
        key = (llm.pk, hardware)
        if key not in submissions:
            submissions[key] = SubmissionFactory(llm=llm, hardware=hardware)
        # Distinct samples are distinct sources unless a test says otherwise (repeats of one source combine).
        source = source or f"{KERNEL_SOURCE}\n# {llm_name} L{problem.level}/{problem.problem_id} sample {sample}\n"
        kernel = KernelFactory(submission=submissions[key], llm=llm, problem=problem, sample=sample, source=source)
        evaluation = EvaluationFactory(
            kernel=kernel,
            hardware=hardware,
            correct=correct,
            speedup=speedup,
            speedup_fp32=fp32 if fp32 is not None else speedup,
            memory_ratio=memory,
            standard_correct=correct if standard is None else standard,
            **extra,
        )
        if hack:
            AuditFlagFactory(kernel=kernel, review_state=AuditFlag.Review.CONFIRMED)
        if d1 is not None:
            DistributionResultFactory(evaluation=evaluation, name="D1", passed=d1)
            for name in ("D2", "D3", "D4"):
                DistributionResultFactory(evaluation=evaluation, name=name, passed=not hidden_fail)
        return evaluation

    return add
