"""The inspector's page is a dataclass of typed parts (inspector/page.py): the record's parts as the record types
them, its own rows where it joins sources, and the verdict from the evaluation, with no attribute set on a model
row and no part turned back into a dict for the template."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluator.harness.orchestrator.launched import report
from evaluator.harness.orchestrator.roofline import speed_of_light
from evaluator.harness.record import Distribution, LaunchedKernel, PairRow, Record, SpeedOfLight
from evaluator.models import DistributionResult
from evaluator.verdict_label import VerdictLabel
from inspector.figures import TimedSide
from inspector.page import DistributionRow, LaunchedRow
from inspector.selectors import kernel_inspection
from leaderboard.selectors.pages import evaluations_with_verdicts
from tests.factories import DistributionResultFactory, ProblemFactory

pytestmark = pytest.mark.django_db

KERNEL = [["my_kernel(float*)", 3.0], ["my_kernel(float*)", 1.0]]
BASE = [["at::native::vectorized_elementwise_kernel<4>(...)", 5.0]]


def _record() -> dict:
    record = Record(status="ok", correct=False).to_dict()
    record["distributions"][3].update(passed=False, error="D4: 3 of 256 elements beyond tolerance", worst_ratio=2.0)
    record["timing"] = {
        **record["timing"],
        "device_kind": "cuda",
        "candidate": {"median_ms": 0.2, "iqr_ms": 0.01, "mean_ms": 0.2, "calls": 40, "rse": 0.01},
        "baseline_tf32": {"median_ms": 0.4, "iqr_ms": 0.01, "mean_ms": 0.4, "calls": 40, "rse": 0.01},
        "pairs": [{"pair": 1, "baseline_tf32_median_ms": 0.4, "candidate_median_ms": 0.2, "speedup": 2.0}],
    }
    counts = {"matrix_flops": 0, "vector_flops": 1 << 20, "bytes": 8 << 20, "dtype": "float32"}
    record["speed_of_light"] = speed_of_light(counts, "NVIDIA H200", 0.2)
    record["launched_kernels"] = report("__global__ void my_kernel(float* x) {}\n", KERNEL, BASE)
    return record


@pytest.fixture
def inspected(add_sample):
    evaluation = add_sample("typed", ProblemFactory(), correct=False, speedup=2.0, result=_record())
    DistributionResultFactory(evaluation=evaluation, name="D1", passed=True)
    DistributionResultFactory(evaluation=evaluation, name="D4", passed=False, errors="stored: 3 elements beyond")
    return evaluation


def test_the_page_holds_typed_parts(inspected):
    page = kernel_inspection(inspected.kernel_id)
    assert all(isinstance(d, DistributionRow) for d in page.distributions)
    d4 = next(d for d in page.distributions if d.name == "D4")
    assert d4.error == "stored: 3 elements beyond" and isinstance(d4.how_far, Distribution)  # the row's, the record's
    assert d4.inputs_help.startswith("inputs negated")
    assert [type(t) for t in page.timing_rows] == [TimedSide, TimedSide]
    assert ("rse", 0.01) in page.timing_rows[0].others
    assert [type(p) for p in page.timing_pairs] == [PairRow]
    assert isinstance(page.result.speed_of_light, SpeedOfLight)
    assert page.launched_rows and all(isinstance(row, LaunchedRow) for row in page.launched_rows)
    assert isinstance(page.launched_rows[0].candidate, LaunchedKernel)
    assert page.verdict == VerdictLabel(
        "Incorrect: D4 (×−1) failed", "badge-bad", "incorrect: wrong outputs under these input distributions"
    )


def test_the_page_sets_no_attribute_on_a_model_row(inspected):
    page = kernel_inspection(inspected.kernel_id)
    fresh = evaluations_with_verdicts().get(pk=inspected.pk)  # what the query itself gives a row
    assert page.evaluation is not None and set(vars(page.evaluation)) == set(vars(fresh))
    for row in DistributionResult.objects.filter(evaluation=inspected):
        assert not hasattr(row, "how_far")


def test_a_stored_rows_errors_and_a_records_error_show_alike(client, add_sample, inspected):
    html = client.get(reverse("inspector:kernel-detail", args=[inspected.kernel_id])).content.decode()
    assert "stored: 3 elements beyond" in html  # DistributionResult.errors
    assert "Incorrect: D4 (×−1) failed" in html
    bare = add_sample("bare", ProblemFactory(), correct=False, speedup=None, result=_record())  # no stored rows
    html = client.get(reverse("inspector:kernel-detail", args=[bare.kernel_id])).content.decode()
    assert "D4: 3 of 256 elements beyond tolerance" in html  # the record's Distribution.error
