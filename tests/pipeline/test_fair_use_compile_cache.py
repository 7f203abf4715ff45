"""The compile cache is not independent evidence: a kernel can leave a file in its build folder that the cache
keeps, and a later evaluation of the same source loads it on a hit. Re-runs and reproductions build from source
(option build_from_source), and their record says the cache was not used. Real harness runs on the CPU, under
the namespaces sandbox (the only one the cache serves)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from catalogue.models import Problem
from evaluator.models import Evaluation
from evaluator.services.reproduction import evaluation_reproduce
from evaluator.services.reruns import evaluation_rerun
from evaluator.services.seeds import seeds_reveal_due
from evaluator.tasks.evaluation import evaluate_kernel
from tests.factories import KernelFactory, SubmissionFactory

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# Correct on its first evaluation, which leaves a header in its build folder (the cache keeps *.h as a build
# product); wrong wherever that header was copied back in, as a cache hit does.
PLANTER = """import os

import torch
import torch.nn as nn

PLANTED = os.path.join(os.environ.get("TORCH_EXTENSIONS_DIR", "/kbv-build"), "planted.h")
SCALE = 0.0 if os.path.exists(PLANTED) else 1.0
if SCALE:
    os.makedirs(os.path.dirname(PLANTED), exist_ok=True)
    with open(PLANTED, "w") as header:
        header.write("// left for the next evaluation of this source\\n")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * SCALE
"""


@pytest.fixture
def private_cache(settings, tmp_path):
    settings.EVALUATOR_COMPILE_CACHE_DIR = tmp_path / "cache"
    settings.EVALUATOR_WORK_DIR = tmp_path / "work"
    settings.EVALUATOR_REQUIRE_SANDBOX = True  # the cache serves the namespaces sandbox only


def evaluated(kernel=None) -> Evaluation:
    problem = Problem.objects.get(problem_set="demo", level=1, problem_id=1)
    if kernel is None:
        submission = SubmissionFactory(hardware="cpu", problem_set="demo", status="received", kernel_count=1)
        kernel = KernelFactory(problem=problem, source=PLANTER, submission=submission)
    evaluation = Evaluation.objects.filter(kernel=kernel, is_current=True).first()
    evaluation = evaluation or Evaluation.objects.create(kernel=kernel, hardware="cpu")
    evaluate_kernel.apply(args=[evaluation.pk])
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.DONE, evaluation.error
    return evaluation


def test_the_planted_build_file_is_what_a_cache_hit_loads(demo_problems, private_cache):
    first, twin = evaluated(), evaluated()  # the same source uploaded twice: its twin hits the cache
    assert first.result["environment"]["compile_cache"] == "miss" and first.correct is True
    assert first.result["environment"]["compile_cache_store"] == "stored"
    assert twin.result["environment"]["compile_cache"] == "hit" and twin.correct is False  # it loaded the plant


def test_a_reproduction_builds_from_source_and_ignores_a_planted_cache_entry(demo_problems, private_cache):
    first = evaluated()
    assert first.correct is True and first.result["environment"]["compile_cache_store"] == "stored"
    seeds_reveal_due(now=timezone.now() + timedelta(days=3650))
    again = evaluation_reproduce(evaluation_id=first.pk)
    assert again.again["environment"]["compile_cache"].startswith("not used (build_from_source")
    assert again.again["correct"] is True and not again.differences, again.report()


def test_a_staff_rerun_builds_from_source(demo_problems, private_cache, django_capture_on_commit_callbacks):
    first = evaluated()
    with django_capture_on_commit_callbacks(execute=False):
        rerun = evaluation_rerun(evaluation_id=first.pk)
    again = evaluated(rerun.kernel)
    assert again.pk == rerun.pk and again.result["environment"]["compile_cache"].startswith("not used")
    assert again.correct is True  # the kernel's own build, not the entry its first evaluation left
