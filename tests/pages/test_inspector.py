"""The kernel inspector: sources, diff, distributions, checks, timing, memory, errors and flag evidence."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluator.harness.record import Record
from evaluator.models import AuditFlag
from inspector.rendering import locate_quote, parse_lines, trim_error
from tests.factories import AuditFlagFactory, DistributionResultFactory, ProblemFactory

pytestmark = pytest.mark.django_db

RECORD = {
    "status": "ok",
    "correct": False,
    "standard_correct": True,
    "params_randomised": True,
    "speedup": 1.8,
    "speedup_ci": [1.7, 1.9],
    "speedup_fp32": 3.6,
    "speedup_compile": None,
    "timing": {
        "method": "cuda_events",
        "device_kind": "cuda",
        "candidate": {"median_ms": 0.5, "iqr_ms": 0.01, "mean_ms": 0.51, "calls": 300, "rse": 0.004},
        "baseline_tf32": {"median_ms": 0.9, "iqr_ms": 0.02, "mean_ms": 0.9, "calls": 300, "rse": 0.003},
    },
    "memory_ratio": 0.5,
    "memory": {"baseline_peak_bytes": 1048576, "candidate_peak_bytes": 2097152},
    "checks": [
        {"name": "output_plain_tensor", "passed": True, "detail": "type(out) is torch.Tensor"},
        {"name": "timer_integrity", "passed": False, "detail": "wall clock 3.1x event time"},
    ],
    "environment": {"device": "NVIDIA H200", "torch": "2.13.0"},
    "error": "",
}


@pytest.fixture
def inspected(add_sample):
    problem = ProblemFactory(level=1, problem_id=19, name="ReLU")
    evaluation = add_sample(
        "judge-me",
        problem,
        speedup=1.8,
        fp32=3.6,
        correct=False,
        memory=0.5,
        result=RECORD,
        speedup_ci_low=1.7,
        speedup_ci_high=1.9,
    )
    DistributionResultFactory(evaluation=evaluation, name="D1", passed=True, max_abs_error=1.5e-6)
    DistributionResultFactory(
        evaluation=evaluation,
        name="D2",
        skipped=True,
        passed=None,
        skip_reason="reference is NaN under D2",
        max_abs_error=None,
    )
    DistributionResultFactory(evaluation=evaluation, name="D4", passed=False, max_abs_error=0.25, max_rel_error=2.0)
    AuditFlagFactory(
        kernel=evaluation.kernel,
        review_state=AuditFlag.Review.CONFIRMED,
        evidence=[{"lines": [9, 10], "quote": "return x.clamp_min(0)", "why": "identity on rand"}],
        rationale="Skips the work on non-negative inputs.",
    )
    return evaluation


def get(client, evaluation, **params):
    return client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id]), params).content.decode()


def test_inspector_shows_the_result_record(client, inspected):
    html = get(client, inspected)
    # Verdict, links, raw JSON.
    assert "confirmed hack" in html and "not ranked" in html
    assert reverse("leaderboard:problem-detail", args=[inspected.kernel.problem_id]) in html
    assert reverse("leaderboard:llm-detail", args=[inspected.kernel.llm_id]) in html
    assert reverse("inspector:kernel-result-json", args=[inspected.kernel_id]) in html
    # Speedups with CI, memory peaks and ratio.
    assert "1.80×" in html and "1.70×" in html and "1.90×" in html and "3.60×" in html
    assert "1.0\u202fMiB" in html and "2.0\u202fMiB" in html and "0.500×" in html
    # Distributions: pass, skipped with its reason, fail with errors.
    assert 'data-distribution="D2"' in html and "reference is NaN under D2" in html
    assert "1.50e-06" in html and "2.50e-01" in html and "2.00e+00" in html
    # Every check, timing, environment.
    assert "output_plain_tensor" in html and "wall clock 3.1x event time" in html
    assert "baseline_tf32" in html and "0.500\u202fms" in html and "<dt>rse</dt><dd>0.004</dd>" in html
    assert "NVIDIA H200" in html and "cuda_events" in html


def test_inspector_sources_diff_and_evidence_highlight(client, inspected):
    html = get(client, inspected)
    kernel_pane = html.split('id="kernel-source"')[1].split('id="reference-source"')[0]
    assert '<a id="k-9" name="k-9"></a><span class="hll">' in kernel_pane
    assert '<a id="k-10" name="k-10"></a><span class="hll">' in kernel_pane
    assert '<a id="k-8" name="k-8"></a><span class="hll">' not in kernel_pane
    assert 'href="#k-10"' in html and "identity on rand" in html and "Skips the work" in html
    diff = html.split('id="source-diff"')[1]
    assert "reference (Model)" in diff and "kernel (ModelNew)" in diff and "clamp_min" in diff


def test_errors_are_escaped_and_trimmed(client, add_sample):
    log = "<script>alert(1)</script>\n" + "\n".join(f"line {i}" for i in range(500))
    evaluation = add_sample(
        "x", ProblemFactory(), correct=False, speedup=None, result_status="compile_error", error=log
    )
    html = get(client, evaluation)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "lines trimmed" in html and "line 499" in html and "line 250" not in html


def test_a_record_that_never_reached_the_gate_shows_its_distributions_as_not_run(client, add_sample):
    """A compile error's record lists D1..D4 unmeasured (passed null): neither pass nor fail."""
    result = Record(status="compile_error", correct=False, error="nvcc: error").to_dict()
    evaluation = add_sample("x", ProblemFactory(), correct=False, speedup=None, result_status="compile_error")
    type(evaluation).objects.filter(pk=evaluation.pk).update(result=result)
    html = get(client, evaluation)
    assert html.count(">not run</span>") == 4  # one per distribution


def test_result_json_and_evaluation_choice(client, inspected, add_sample):
    url = reverse("inspector:kernel-result-json", args=[inspected.kernel_id])
    assert client.get(url).json() == RECORD
    assert client.get(url, {"evaluation": 99999}).status_code == 404
    assert client.get(reverse("inspector:kernel-result-json", args=[99999])).status_code == 404
    assert client.get(reverse("inspector:kernel-detail", args=[99999])).status_code == 404


def test_unevaluated_kernel(client, db):
    from tests.factories import KernelFactory

    kernel = KernelFactory()
    html = client.get(reverse("inspector:kernel-detail", args=[kernel.pk])).content.decode()
    assert "not been evaluated yet" in html
    assert client.get(reverse("inspector:kernel-result-json", args=[kernel.pk])).status_code == 404


def test_inspector_query_count(client, inspected, django_assert_max_num_queries):
    # kernel, evaluations, distributions, flags (+ reviewer join), the stored torch.compile baseline, the kernel's
    # verdicts across software stacks, the seeds' commitment (staff pages also read the evaluation's profile requests)
    with django_assert_max_num_queries(7):
        assert client.get(reverse("inspector:kernel-detail", args=[inspected.kernel_id])).status_code == 200


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (12, [12]),
        ([3, 5], [3, 5]),
        ("7-9", [7, 8, 9]),
        ("2, 4", [2, 4]),
        ({"start": 1, "end": 2}, [1, 2]),
        (None, []),
        (True, []),
        ("x", []),
        (-1, []),
    ],
)
def test_parse_lines(value, expected):
    assert parse_lines(value) == expected


def test_locate_quote_and_trim():
    assert locate_quote("a = 1\nstream = torch.cuda.Stream()\n", "torch.cuda.Stream()") == [2]
    assert trim_error("short") == "short"
    assert len(trim_error("x" * 20000)) < 6100


@pytest.mark.parametrize(
    ("sandbox", "shown"),
    [("namespaces", "badge badge-ok"), ("uid", "weaker isolation"), ("none", "weaker isolation")],
)
def test_inspector_says_which_sandbox_ran_the_kernel(client, add_sample, sandbox, shown):
    record = {**RECORD, "environment": {**RECORD["environment"], "sandbox": sandbox, "sandbox_reason": "no bwrap"}}
    evaluation = add_sample("boxed", ProblemFactory(level=1, problem_id=20), result=record)
    html = get(client, evaluation)
    assert "Sandbox: " in html and sandbox in html and shown in html


def test_inspector_shows_how_far_a_failing_distribution_was_from_passing(client, add_sample):
    """Tolerances: 9 wrong elements in 134 million at 1.3x their allowance read differently from a hack."""
    result = Record(status="ok", correct=False).to_dict()
    result["distributions"][1].update(
        passed=False,
        trials=2,
        max_abs_error=2.6e-3,
        atol=1e-3,
        rtol=1e-3,
        worst_ratio=1.3,
        beyond_tolerance=9,
        elements=134217728,
        error="9 of 134217728 elements beyond tolerance",
    )
    evaluation = add_sample("x", ProblemFactory(), correct=False, speedup=None)
    type(evaluation).objects.filter(pk=evaluation.pk).update(result=result)
    html = get(client, evaluation)
    assert "How far from passing" in html
    assert "worst element 1.30× its allowance; 9 of 134217728 elements beyond (atol = rtol = 1.00e-03)" in html


def test_inspector_explains_a_precision_sized_miss_in_timed_outputs(client, add_sample):
    """Issue 38: an edge miss found in timed outputs reads as `incorrect` with its figures and the precision
    explanation, as it would in D1-D4, not as a hack."""
    result = Record(status="ok", correct=False).to_dict()
    for d in result["distributions"]:
        d.update(passed=True, trials=2)
    result["timed_outputs"] = {
        "name": "timed outputs",
        "passed": False,
        "skipped": False,
        "skip_reason": "",
        "max_abs_error": 2.4e-3,
        "max_rel_error": 0.01,
        "trials": 12,
        "error": "input set 1 (block 3): 10 of 32768 elements beyond tolerance: a precision-sized miss",
        "atol": 1e-3,
        "rtol": 1e-3,
        "worst_ratio": 1.2,
        "beyond_tolerance": 10,
        "elements": 32768,
        "precision_sized": True,
    }
    result["error"] = "incorrect: timed outputs: input set 1 (block 3): 10 of 32768 elements beyond tolerance"
    evaluation = add_sample("edge", ProblemFactory(), correct=False, speedup=None)
    type(evaluation).objects.filter(pk=evaluation.pk).update(result=result)
    html = get(client, evaluation)
    assert 'data-distribution="timed outputs"' in html and "the outputs of timed calls, re-checked" in html
    assert (
        "worst element 1.20× its allowance; 10 of 32768 elements beyond (atol = rtol = 1.00e-03): precision-sized"
        in html
    )
    assert "data-precision-miss" in html and "timed outputs: worst element 1.20× its allowance, 10 of 32768" in html
    assert "judged <strong>incorrect</strong> wherever it is found" in html
    assert "Incorrect: timed outputs failed" in html
    beyond = {**result, "timed_outputs": {**result["timed_outputs"], "worst_ratio": 400.0, "precision_sized": False}}
    other = add_sample("stale", ProblemFactory(), correct=False, speedup=None)
    type(other).objects.filter(pk=other.pk).update(result=beyond)
    assert "data-precision-miss" not in get(client, other)


def test_inspector_shows_the_process_pairs_of_a_short_problem(client, add_sample):
    """A short problem is timed in several process pairs; a reader sees each pair's speedup next to
    the pooled one and the interval that covers them."""
    pairs = [
        {"pair": 1, "baseline_tf32_median_ms": 0.365, "candidate_median_ms": 0.380, "speedup": 0.9605, "calls": 400},
        {"pair": 2, "baseline_tf32_median_ms": 0.366, "candidate_median_ms": 0.352, "speedup": 1.0398, "calls": 410},
    ]
    timing = {**RECORD["timing"], "pairs": pairs, "ci_method": "hierarchical bootstrap over 2 process pairs"}
    evaluation = add_sample("paired", ProblemFactory(level=2, problem_id=12), result={**RECORD, "timing": timing})
    html = get(client, evaluation)
    assert "data-process-pairs" in html and "0.961×" in html and "1.04×" in html
    assert "hierarchical bootstrap over 2 process pairs" in html
    single = add_sample("single", ProblemFactory(level=2, problem_id=13), result=RECORD)
    assert "data-process-pairs" not in get(client, single)
