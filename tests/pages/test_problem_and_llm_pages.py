"""Problem and LLM pages: what they show and that they stay at a fixed number of queries."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evaluator.models import Baseline
from tests.factories import BaselineFactory, ProblemFactory

pytestmark = pytest.mark.django_db


def test_problem_page_ranks_eligible_kernels_and_marks_hacks(client, add_sample):
    problem = ProblemFactory(level=1, problem_id=19, name="ReLU")
    slow = add_sample("slow", problem, speedup=1.1)
    fast = add_sample("fast", problem, speedup=2.5)
    hacked = add_sample("cheat", problem, speedup=40.0, hack=True)
    wrong = add_sample("wrong", problem, speedup=None, correct=False, result_status="compile_error")
    BaselineFactory(problem=problem, precision=Baseline.Precision.TF32, median_ms=0.5, peak_memory_bytes=3 << 20)
    BaselineFactory(problem=problem, precision=Baseline.Precision.FP32, median_ms=0.75)
    html = client.get(reverse("leaderboard:problem-detail", args=[problem.pk])).content.decode()
    order = [int(k) for k in re.findall(r'href="/kernels/(\d+)/">inspect', html)]
    assert order == [fast.kernel_id, slow.kernel_id, hacked.kernel_id, wrong.kernel_id]
    assert "confirmed hack" in html.lower() and "not ranked" in html
    assert "Compile error" in html
    assert "PyTorch TF32" in html and "PyTorch FP32" in html and "0.500" in html and "3.0" in html
    assert 'class="highlight"' in html and "get_inputs" in html  # highlighted reference source
    assert "counted in rankings" in html


def test_inactive_problem_says_why(client, db):
    problem = ProblemFactory(active=False, inactive_reason="Reference output is constant")
    html = client.get(reverse("leaderboard:problem-detail", args=[problem.pk])).content.decode()
    assert "inactive" in html and "Reference output is constant" in html


def test_problem_page_404(client, db):
    assert client.get(reverse("leaderboard:problem-detail", args=[999])).status_code == 404


def test_llm_page_metrics_submissions_and_kernels(client, add_sample):
    problems = [ProblemFactory(level=1, problem_id=1), ProblemFactory(level=2, problem_id=1)]
    e1 = add_sample("model-x", problems[0], speedup=2.0)
    add_sample("model-x", problems[1], speedup=0.5)
    add_sample("other", problems[0], speedup=9.0)
    llm = e1.kernel.llm
    html = client.get(reverse("leaderboard:llm-detail", args=[llm.pk])).content.decode()
    assert "<h1>model-x</h1>" in html
    metrics = html.split('id="llm-metrics"')[1].split("</table>")[0]
    assert "Overall" in metrics and "Level 1" in metrics and "Level 2" in metrics
    assert "2.00×" in metrics and "0.500×" in metrics and "1.00×" in metrics
    assert e1.kernel.submission.bundle_name in html
    assert html.count('">inspect #') == 2  # only its own kernels
    html = client.get(reverse("leaderboard:llm-detail", args=[llm.pk]), {"level": "2"}).content.decode()
    assert html.count('">inspect #') == 1


def test_detail_pages_have_a_fixed_query_count(client, add_sample, django_assert_max_num_queries):
    problems = [ProblemFactory(level=1, problem_id=i) for i in range(1, 13)]
    for llm in ("a", "b", "c", "d"):
        for p in problems:
            for sample in range(3):
                add_sample(llm, p, sample, speedup=1.0 + sample, hack=(sample == 2 and p.problem_id % 4 == 0))
    llm_id = add_sample("a", problems[0], 5).kernel.llm_id
    with django_assert_max_num_queries(5):
        assert client.get(reverse("leaderboard:problem-detail", args=[problems[0].pk])).status_code == 200
    # fingerprint, choices (2: results, problem sets), the LLM's views, llm, submissions, count, page, board (4)
    with django_assert_max_num_queries(12):
        assert client.get(reverse("leaderboard:llm-detail", args=[llm_id])).status_code == 200
