"""The charts' log axes read as numbers in Chromium: the speedup CDF's ticks over 0.15x-3x read "0.2 0.3 0.5 1 2 3",
not Plotly's first-digit minor labels ("2 3 4 5 6 7 8 9 1")."""

from __future__ import annotations

import pytest

from tests.factories import EvaluationFactory, KernelFactory, LLMFactory, ProblemFactory, SubmissionFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SPEEDUPS = (0.15, 0.3, 0.6, 1.2, 3.0)


@pytest.fixture
def spread_board():
    """Two LLMs whose correct kernels run from 0.15x to 3x (and 0.2x to 2x): a CDF across more than a decade."""
    problems = [ProblemFactory(level=1, problem_id=i + 1, name=f"Op{i}") for i in range(len(SPEEDUPS))]
    for name, scale in (("wide", 1.0), ("narrow", 0.7)):
        submission = SubmissionFactory(llm=LLMFactory(name=name))
        for problem, speedup in zip(problems, SPEEDUPS, strict=True):
            kernel = KernelFactory(submission=submission, llm=submission.llm, problem=problem)
            EvaluationFactory(kernel=kernel, speedup=max(0.2, speedup * scale), memory_ratio=1.0)


def tick_labels(page, chart: str, axis: str) -> list[str]:
    page.wait_for_selector(f"#{chart} .main-svg", timeout=20000)
    return page.locator(f"#{chart} .{axis}axislayer-above .{axis}tick text").all_text_contents()


@pytest.mark.parametrize("width", (1400, 390))
def test_log_axis_ticks_read_as_increasing_numbers(page, spread_board, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/")
    for chart, axis in (("chart-speedup-cdf", "x"), ("chart-memory-speedup", "x")):
        labels = tick_labels(page, chart, axis)
        values = [float(label.replace("\u2212", "-")) for label in labels]  # every label is a whole number
        assert len(values) >= 3, (chart, labels)
        assert values == sorted(values) and len(set(values)) == len(values), (chart, labels)
        assert "1" in labels, (chart, labels)  # the reference speedup is marked
    cdf = tick_labels(page, "chart-speedup-cdf", "x")
    assert {"0.2", "0.5", "1", "2"} <= set(cdf), cdf
    assert page.js_errors == []
