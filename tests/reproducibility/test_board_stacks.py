"""The board can be read per software stack and says when its numbers were measured."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluator.harness.record import Record
from leaderboard.selectors.ranking import leaderboard_cache_clear
from tests.factories import EvaluationFactory, KernelFactory, LLMFactory, ProblemFactory, SubmissionFactory

pytestmark = pytest.mark.django_db


def _verdict(llm_name: str, torch: str, days_ago: int):
    kernel = KernelFactory(problem=ProblemFactory(), submission=SubmissionFactory(llm=LLMFactory(name=llm_name)))
    record = Record(status="ok", correct=True, standard_correct=True, speedup=2.0).to_dict()
    record["environment"].update(torch=torch, cuda="13.0", device_name="NVIDIA H200")
    return EvaluationFactory(kernel=kernel, result=record, finished_at=timezone.now() - timedelta(days=days_ago))


def test_the_board_filters_per_stack_and_says_when_it_was_measured(client):
    _verdict("old-llm", "2.13.0", days_ago=10)
    _verdict("new-llm", "2.14.0", days_ago=1)
    leaderboard_cache_clear()
    params = {"hardware": "h200", "problem_set": "kernelbench-main"}
    html = client.get("/", params).content.decode()
    assert "old-llm" in html and "new-llm" in html and "on 2 software stacks" in html
    assert 'id="board-measured"' in html and (timezone.now() - timedelta(days=10)).strftime("%Y-%m-%d") in html
    new_stack = "torch 2.14.0 / CUDA 13.0 / GPU NVIDIA H200"
    html = client.get("/", params | {"stack": new_stack}).content.decode()
    assert "new-llm" in html and "old-llm" not in html
    assert f"on <strong>{new_stack}</strong>" in html
