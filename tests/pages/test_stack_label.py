"""The software stack a verdict was measured on reads right on a CPU: "torch 2.13.0+cpu / CPU", not "GPU cpu"."""

from __future__ import annotations

import pytest

from evaluator.harness.record import Record
from evaluator.selectors.stacks import stack_label
from tests.factories import EvaluationFactory, KernelFactory, LLMFactory, ProblemFactory, SubmissionFactory

pytestmark = pytest.mark.django_db


def _verdict(llm_name: str, **environment: str) -> None:
    kernel = KernelFactory(
        problem=ProblemFactory(), submission=SubmissionFactory(llm=LLMFactory(name=llm_name), hardware="cpu")
    )
    record = Record(status="ok", correct=True, standard_correct=True, speedup=1.5).to_dict()
    record["environment"].update(environment)
    EvaluationFactory(kernel=kernel, hardware="cpu", result=record)


def test_a_cpu_stack_reads_cpu_and_the_board_filters_by_it(client):
    _verdict("cpu-llm", torch="2.13.0+cpu", device="cpu", device_name="cpu")
    _verdict("gpu-llm", torch="2.13.0", cuda="13.0", device_name="NVIDIA H200")
    assert stack_label({"torch": "2.13.0+cpu", "device_name": "cpu"}) == "torch 2.13.0+cpu / CPU"
    assert stack_label({"torch": "2.13.0", "device_name": "NVIDIA H200"}) == "torch 2.13.0 / GPU NVIDIA H200"
    html = client.get("/", {"hardware": "cpu", "problem_set": "kernelbench-main"}).content.decode()
    assert "torch 2.13.0+cpu / CPU" in html and "GPU cpu" not in html
    html = client.get(
        "/", {"hardware": "cpu", "problem_set": "kernelbench-main", "stack": "torch 2.13.0+cpu / CPU"}
    ).content.decode()
    assert 'data-name="cpu-llm"' in html and 'data-name="gpu-llm"' not in html
