"""factory_boy factories for the core models, shared by every test area.

Kept general on purpose: defaults describe an ordinary, finished, correct evaluation; tests override what matters.
"""

from __future__ import annotations

import hashlib

import factory

from catalogue.models import LLM, Kernel, Problem, Submission
from evaluator.harness.record import Record
from evaluator.models import AuditFlag, Baseline, DistributionResult, Evaluation

REFERENCE_SOURCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(16, 16)]


def get_init_inputs():
    return []
"""

KERNEL_SOURCE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0)
"""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class LLMFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LLM
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"llm-{n:03d}")
    organisation = "Test Org"


class ProblemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Problem

    problem_set = "kernelbench-main"
    level = 1
    problem_id = factory.Sequence(lambda n: n + 1)
    name = factory.LazyAttribute(lambda o: f"Problem_{o.problem_id}")
    filename = factory.LazyAttribute(lambda o: f"{o.problem_id}_{o.name}.py")
    source = factory.LazyAttribute(lambda o: REFERENCE_SOURCE + f"# problem {o.level}/{o.problem_id}\n")
    sha256 = factory.LazyAttribute(lambda o: _sha(o.source))
    active = True
    inactive_reason = ""


class SubmissionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Submission

    llm = factory.SubFactory(LLMFactory)
    status = Submission.Status.DONE
    problem_set = "kernelbench-main"
    hardware = "h200"
    bundle_name = factory.Sequence(lambda n: f"bundle-{n}.zip")


class KernelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Kernel

    submission = factory.SubFactory(SubmissionFactory)
    llm = factory.SelfAttribute("submission.llm")
    problem = factory.SubFactory(ProblemFactory)
    sample = 0
    source = KERNEL_SOURCE
    sha256 = factory.LazyAttribute(lambda o: _sha(o.source))


class EvaluationFactory(factory.django.DjangoModelFactory):
    """A finished evaluation; `correct`, `speedup` etc. default to a correct 1.5x kernel."""

    class Meta:
        model = Evaluation

    kernel = factory.SubFactory(KernelFactory)
    hardware = factory.SelfAttribute("kernel.submission.hardware")
    status = Evaluation.Status.DONE
    is_current = True
    attempts = 1
    result_status = Evaluation.ResultStatus.OK
    correct = True
    standard_correct = True
    reference_constant = False
    speedup = 1.5
    speedup_ci_low = factory.LazyAttribute(lambda o: o.speedup * 0.97 if o.speedup else None)
    speedup_ci_high = factory.LazyAttribute(lambda o: o.speedup * 1.03 if o.speedup else None)
    speedup_fp32 = factory.LazyAttribute(lambda o: o.speedup * 1.2 if o.speedup else None)
    memory_ratio = 1.0
    candidate_ms = 1.0
    result = factory.LazyAttribute(
        lambda o: Record(
            status=o.result_status,
            correct=o.correct,
            standard_correct=o.standard_correct,
            speedup=o.speedup,
            speedup_fp32=o.speedup_fp32,
            memory_ratio=o.memory_ratio,
            checks=[],
        ).to_dict()
    )


class DistributionResultFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DistributionResult

    evaluation = factory.SubFactory(EvaluationFactory)
    name = "D1"
    passed = True
    skipped = False
    max_abs_error = 1e-6
    max_rel_error = 1e-6
    trials = 2


class BaselineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Baseline

    problem = factory.SubFactory(ProblemFactory)
    hardware = "h200"
    torch_version = "2.13.0"
    precision = Baseline.Precision.TF32
    median_ms = 1.0
    iqr_ms = 0.01
    calls = 100
    peak_memory_bytes = 1 << 20


class AuditFlagFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditFlag

    kernel = factory.SubFactory(KernelFactory)
    source = AuditFlag.Source.JUDGE
    source_name = "judge-a"
    verdict = AuditFlag.Verdict.HACK
    severity = AuditFlag.Severity.HIGH
    classes = factory.LazyFunction(lambda: ["A1"])
    evidence = factory.LazyFunction(lambda: [{"lines": [10], "quote": "return x.clamp_min(0)", "why": "example"}])
    rationale = "Example rationale."
    confidence = 0.9
    review_state = AuditFlag.Review.SUSPECTED
