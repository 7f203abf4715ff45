"""Verdicts that follow the software: when the workers of a hardware kind run another torch than a ranked kernel
was measured on, the best kernel per problem and LLM is queued again, on its own queue, within the budget."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluator.harness import seeds
from evaluator.harness.record import Record
from evaluator.models import Evaluation, ReEvaluation, SeedCommitment
from evaluator.selectors.stacks import current_stack, kernel_verdict_history
from evaluator.services.reruns import champions_rerun, rerun_budget_left
from tests.factories import (
    EvaluationFactory,
    KernelFactory,
    LLMFactory,
    ProblemFactory,
    SubmissionFactory,
    record_only_columns,
)

pytestmark = pytest.mark.django_db

OLD = {"torch": "2.13.0", "cuda": "13.0", "device_name": "NVIDIA H200"}


def _evaluation(problem, llm, speedup: float, *, env: dict, age_hours: float, seconds: float = 100.0):
    kernel = KernelFactory(
        problem=problem,
        submission=SubmissionFactory(llm=llm, hardware="h200", kernel_count=1, evaluated_count=1, correct_count=1),
    )
    record = Record(status="ok", correct=True, standard_correct=True, speedup=speedup).to_dict()
    record["environment"].update(env)
    evaluation = EvaluationFactory(
        kernel=kernel,
        speedup=speedup,
        result=record,
        harness_seconds=seconds,
        finished_at=timezone.now() - timedelta(hours=age_hours),
    )
    master = seeds.draw()
    SeedCommitment.objects.create(evaluation=evaluation, master=master, digest=seeds.digest(master), scheme="x")
    return evaluation


@pytest.fixture
def board():
    """Three problems x one LLM: a champion and a slower kernel each, all measured on torch 2.13."""
    llm = LLMFactory()
    champions, slower = [], []
    for speedup in (3.0, 2.0, 1.5):
        problem = ProblemFactory()
        champions.append(_evaluation(problem, llm, speedup, env=OLD, age_hours=48))
        slower.append(_evaluation(problem, llm, speedup / 2, env=OLD, age_hours=48))
    return champions, slower


def test_a_new_torch_requeues_the_champions_within_the_budget(
    board, sent, settings, django_capture_on_commit_callbacks
):
    champions, slower = board
    settings.RERUN_GPU_SECONDS_PER_DAY = 250  # two champions' worth (100 s each)
    assert champions_rerun(hardware="h200")[0].queued == []  # every verdict is on the workers' stack: nothing to do

    # A worker now runs torch 2.14: its first verdict says so.
    _evaluation(ProblemFactory(), LLMFactory(), 1.1, env=OLD | {"torch": "2.14.0"}, age_hours=0)
    assert current_stack(hardware="h200") == "torch 2.14.0 / CUDA 13.0 / GPU NVIDIA H200"

    with django_capture_on_commit_callbacks(execute=True):
        [plan] = champions_rerun(hardware="h200")
    assert len(plan.queued) == 2 and plan.over_budget == [champions[2].kernel_id]  # fastest first, budget-bound
    requeued = Evaluation.objects.filter(pk__in=plan.queued)
    assert {ev.kernel_id for ev in requeued} == {champions[0].kernel_id, champions[1].kernel_id}
    assert all(ev.status == Evaluation.Status.QUEUED and ev.is_current for ev in requeued)
    for old in champions[:2]:
        old.refresh_from_db()
        assert not old.is_current and old.status == Evaluation.Status.DONE  # kept, for the history
        assert old.seed_commitment.revealed_at is not None  # superseded: its seeds are revealed at once
    assert {call["queue"] for call in sent.calls} == {"eval-h200-rerun"} and sent.ids == plan.queued
    rerun = ReEvaluation.objects.get(evaluation_id=plan.queued[0])
    assert rerun.stack.startswith("torch 2.14.0") and rerun.previous_stack.startswith("torch 2.13.0")
    assert rerun_budget_left(hardware="h200") == pytest.approx(50)

    # The budget is spent for today, and a kernel is re-run once per stack.
    [again] = champions_rerun(hardware="h200")
    assert again.queued == [] and again.over_budget == [champions[2].kernel_id]
    assert not any(ev.kernel_id == slower[0].kernel_id for ev in requeued)


def test_the_history_lists_a_kernels_verdicts_across_stacks(board, sent, settings):
    champions, _ = board
    settings.RERUN_GPU_SECONDS_PER_DAY = 1000
    _evaluation(ProblemFactory(), LLMFactory(), 1.1, env=OLD | {"torch": "2.14.0"}, age_hours=0)
    [plan] = champions_rerun(hardware="h200")
    new = Evaluation.objects.get(pk=plan.queued[0])
    record = Record(status="ok", correct=True, standard_correct=True, speedup=2.7).to_dict()
    record["environment"].update(OLD | {"torch": "2.14.0"})
    Evaluation.objects.filter(pk=new.pk).update(
        status=Evaluation.Status.DONE,
        result=record,
        **record_only_columns(record),
        speedup=2.7,
        correct=True,
        finished_at=timezone.now(),
    )
    history = kernel_verdict_history(kernel_id=new.kernel_id)
    assert [(h.stack.split(" / ")[0], h.speedup, h.is_current, h.re_evaluation) for h in history] == [
        ("torch 2.13.0", 3.0, False, False),
        ("torch 2.14.0", 2.7, True, True),
    ]
