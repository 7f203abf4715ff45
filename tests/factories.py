"""factory_boy factories for the core models, shared by every test area.

Kept general on purpose: defaults describe an ordinary, finished, correct evaluation; tests override what matters.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import factory

from catalogue.models import LLM, Kernel, Problem, Submission
from evaluator.harness.record import Record
from evaluator.models import AuditFlag, Baseline, DistributionResult, Evaluation
from evaluator.record_projection import evaluation_columns

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


class LLMFactory(factory.django.DjangoModelFactory[LLM]):
    class Meta:
        model = LLM
        django_get_or_create = ("name",)

    if TYPE_CHECKING:  # calling a factory makes a LLM (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> LLM: ...  # type: ignore[misc]

    name = factory.Sequence(lambda n: f"llm-{n:03d}")
    organisation = "Test Org"


class ProblemFactory(factory.django.DjangoModelFactory[Problem]):
    class Meta:
        model = Problem

    if TYPE_CHECKING:  # calling a factory makes a Problem (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> Problem: ...  # type: ignore[misc]

    problem_set = "kernelbench-main"
    level = 1
    problem_id = factory.Sequence(lambda n: n + 1)
    name = factory.LazyAttribute(lambda o: f"Problem_{o.problem_id}")
    filename = factory.LazyAttribute(lambda o: f"{o.problem_id}_{o.name}.py")
    source = factory.LazyAttribute(lambda o: REFERENCE_SOURCE + f"# problem {o.level}/{o.problem_id}\n")
    sha256 = factory.LazyAttribute(lambda o: _sha(o.source))
    active = True
    inactive_reason = ""


class SubmissionFactory(factory.django.DjangoModelFactory[Submission]):
    class Meta:
        model = Submission

    if TYPE_CHECKING:  # calling a factory makes a Submission (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> Submission: ...  # type: ignore[misc]

    llm = factory.SubFactory(LLMFactory)
    status = Submission.Status.DONE
    problem_set = "kernelbench-main"
    hardware = "h200"
    bundle_name = factory.Sequence(lambda n: f"bundle-{n}.zip")


class KernelFactory(factory.django.DjangoModelFactory[Kernel]):
    class Meta:
        model = Kernel

    if TYPE_CHECKING:  # calling a factory makes a Kernel (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> Kernel: ...  # type: ignore[misc]

    submission = factory.SubFactory(SubmissionFactory)
    llm = factory.SelfAttribute("submission.llm")
    problem = factory.SubFactory(ProblemFactory)
    sample = 0
    source = KERNEL_SOURCE
    sha256 = factory.LazyAttribute(lambda o: _sha(o.source))


# The columns queries filter on that only the record decides (timing stability, speed of light, stack): a row made
# here takes them from its `result` as the projection would, unless the test sets them itself.
RECORD_ONLY_COLUMNS = (
    "timing_unstable",
    "speed_of_light_fraction",
    "env_torch",
    "env_cuda",
    "env_driver",
    "env_device_name",
)


class EvaluationFactory(factory.django.DjangoModelFactory[Evaluation]):
    """A finished evaluation; `correct`, `speedup` etc. default to a correct 1.5x kernel. The record-only columns
    (RECORD_ONLY_COLUMNS) follow `result`."""

    class Meta:
        model = Evaluation

    if TYPE_CHECKING:  # calling a factory makes a Evaluation (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> Evaluation: ...  # type: ignore[misc]

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

    @classmethod
    def _create(cls, model_class: type[Evaluation], *args: Any, **kwargs: Any) -> Evaluation:
        kwargs = record_only_columns(kwargs.get("result")) | kwargs
        return super()._create(model_class, *args, **kwargs)


def record_only_columns(result: dict[str, Any] | None) -> dict[str, Any]:
    """The record-only columns (RECORD_ONLY_COLUMNS) the projection makes of `result`, to store beside it."""
    projected = evaluation_columns(Record.from_stored(result))
    return {name: projected[name] for name in RECORD_ONLY_COLUMNS}


def store_result(evaluation: Evaluation, result: dict[str, Any]) -> None:
    """Replace a row's record, and the record-only columns with what the projection makes of it."""
    evaluation.result = result
    for name, value in record_only_columns(result).items():
        setattr(evaluation, name, value)
    evaluation.save(update_fields=["result", *RECORD_ONLY_COLUMNS])


class DistributionResultFactory(factory.django.DjangoModelFactory[DistributionResult]):
    class Meta:
        model = DistributionResult

    if TYPE_CHECKING:  # calling a factory makes a DistributionResult (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> DistributionResult: ...  # type: ignore[misc]

    evaluation = factory.SubFactory(EvaluationFactory)
    name = "D1"
    passed = True
    skipped = False
    max_abs_error = 1e-6
    max_rel_error = 1e-6
    trials = 2


class BaselineFactory(factory.django.DjangoModelFactory[Baseline]):
    class Meta:
        model = Baseline

    if TYPE_CHECKING:  # calling a factory makes a Baseline (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> Baseline: ...  # type: ignore[misc]

    problem = factory.SubFactory(ProblemFactory)
    hardware = "h200"
    torch_version = "2.13.0"
    precision = Baseline.Precision.TF32
    median_ms = 1.0
    iqr_ms = 0.01
    calls = 100
    peak_memory_bytes = 1 << 20


class AuditFlagFactory(factory.django.DjangoModelFactory[AuditFlag]):
    class Meta:
        model = AuditFlag

    if TYPE_CHECKING:  # calling a factory makes a AuditFlag (factory_boy's __new__ is untyped)

        def __new__(cls, *args: Any, **kwargs: Any) -> AuditFlag: ...  # type: ignore[misc]

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
