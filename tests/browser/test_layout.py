"""Layout at a laptop width (1400 px) and a phone width (390 px): no page scrolls sideways and no chart is wider
than its card, on the leaderboard, an LLM page, a problem page and the inspector.

Set LAYOUT_SCREENSHOTS=<folder> to save a full-page screenshot of each page at each width there (the committed
ones are in benchmarks/results/screenshots/).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.models import LLM, Problem
from evaluator.models import Evaluation
from tests.factories import DistributionResultFactory, EvaluationFactory, KernelFactory, ProblemFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1400, 390)
HARDWARE = "synthetic-h200"
# A CPU record shaped like the harness's: long digests and nested settings that once widened the page to 734 px.
CPU_RECORD = {
    "status": "ok",
    "correct": False,
    "speedup": 0.29,
    "timing": {
        "method": "perf_counter_ns",
        "candidate": {"median_ms": 0.41, "iqr_ms": 0.2, "mean_ms": 0.5, "calls": 40, "rse_median": None},
        "baseline_tf32": {"median_ms": 0.12, "iqr_ms": 0.01, "mean_ms": 0.12, "calls": 40, "blocks": {"n": 4}},
    },
    "environment": {
        "harness_version": "2026.11",
        "device": "cpu",
        "device_name": None,
        "seeds_digest": "9f" * 32,
        "kernel_sha256": "ab" * 32,
        "options": {"quick": False, "compile_baseline": False, "randomise_params": True, "verified_trials": 2},
        "precision_flags": {
            "reference": {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False},
            "candidate": {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True},
        },
        "limits": {"host_memory_bytes": 8589934592, "max_processes": 64, "max_file_bytes": 1073741824},
    },
}


@pytest.fixture
def site(problems_jsonl):
    call_command("seed_demo_results", llms=5, problems=24, samples=2, problems_jsonl=problems_jsonl)
    llm = LLM.objects.filter(name__startswith="synthetic-").order_by("name").first()
    problem = Problem.objects.filter(kernels__evaluations__hardware=HARDWARE).order_by("level", "problem_id").first()
    cpu_problem = ProblemFactory(problem_set="demo", level=1, problem_id=1, name="ReLU with a long descriptive name")
    kernel = KernelFactory(problem=cpu_problem, submission__hardware="cpu", submission__llm__name="demo-llm")
    evaluation = EvaluationFactory(
        kernel=kernel, hardware="cpu", correct=False, speedup=0.29, speedup_ci_low=0.01, speedup_ci_high=4.0,
        memory_ratio=None, result=CPU_RECORD, result_status=Evaluation.ResultStatus.OK,
    )  # fmt: skip
    for name in ("D1", "D2", "D3", "D4"):
        DistributionResultFactory(evaluation=evaluation, name=name, passed=name != "D4")
    return {
        "leaderboard": f"/?hardware={HARDWARE}",
        "llm": f"/llms/{llm.pk}/?hardware={HARDWARE}",
        "problem": f"/problems/{problem.pk}/",
        "inspector": f"/kernels/{kernel.pk}/",
    }


def settle(page) -> None:
    """Wait until every chart on the page is drawn."""
    page.wait_for_load_state("load")
    charts = page.locator(".plotly-graph-div").count()
    if charts:
        page.wait_for_function(
            "n => document.querySelectorAll('.plotly-graph-div .main-svg').length >= n", arg=charts, timeout=30000
        )
        page.wait_for_timeout(300)  # a resize after the first draw (if any) has had time to run


def overflow(page) -> dict:
    """The page's horizontal overflow and every chart wider than the card around it."""
    return page.evaluate(
        """() => {
            const doc = document.documentElement;
            const charts = [...document.querySelectorAll('.plotly-graph-div')].map(gd => {
                const card = gd.closest('figure.chart') || gd.parentElement;
                const svg = gd.querySelector('svg.main-svg');
                return {id: gd.id, chart: svg ? svg.getBoundingClientRect().width : 0, card: card.clientWidth};
            });
            return {scroll: doc.scrollWidth, viewport: window.innerWidth,
                    wide: charts.filter(c => c.chart > c.card + 1), charts: charts.length};
        }"""
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways_and_no_chart_outgrows_its_card(page, site, width):
    page.set_viewport_size({"width": width, "height": 900})
    folder = os.getenv("LAYOUT_SCREENSHOTS")
    for name, url in site.items():
        page.goto(url)
        settle(page)
        found = overflow(page)
        assert found["scroll"] <= found["viewport"], f"{name} at {width}px scrolls sideways: {found}"
        assert found["wide"] == [], f"{name} at {width}px: charts wider than their cards: {found['wide']}"
        if name in ("leaderboard", "llm"):
            assert found["charts"] >= 3, f"{name}: the charts were not drawn"
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"), full_page=True)
    assert page.js_errors == []


def test_phone_keeps_the_name_column_in_view_and_hides_the_mode_bar(page, site):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site["leaderboard"])
    settle(page)
    assert page.locator(".modebar-container .modebar").count() == 0 or not page.locator(".modebar").first.is_visible()
    scroller = page.locator("div.table-scroll").first
    scroller.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    key = page.locator("table.board tbody th.key").first.bounding_box()
    box = scroller.bounding_box()
    assert key["x"] >= box["x"] - 1 and key["x"] + key["width"] <= box["x"] + box["width"]
