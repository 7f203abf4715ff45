"""Load every page in Chromium, sort the board, click through the heat map, open the inspector on a hack."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from evaluator.harness.orchestrator.roofline import speed_of_light
from evaluator.models import AuditFlag, Baseline
from tests.factories import (
    AuditFlagFactory,
    BaselineFactory,
    DistributionResultFactory,
    EvaluationFactory,
    KernelFactory,
    LLMFactory,
    ProblemFactory,
    SubmissionFactory,
    store_result,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HACKED_SOURCE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()

    def forward(self, x):
        with torch.cuda.stream(self.stream):
            return x.clamp_min(0)
"""


def sol_record(fraction: float) -> dict:
    """A record's `speed_of_light` on the H200 (memory-bound ReLU-like work) whose fraction is `fraction`."""
    counts = {"matrix_flops": 0, "vector_flops": 1 << 20, "bytes": 8 << 20, "dtype": "float32"}
    bound_ms = speed_of_light(counts, "NVIDIA H200", 1.0)["bound_ms"]
    return speed_of_light(counts, "NVIDIA H200", bound_ms / fraction)


@pytest.fixture
def board():
    """Three LLMs on six problems (two per level), baselines, and one confirmed hack."""
    problems = [ProblemFactory(level=level, problem_id=i, name=f"Op{level}{i}") for level in (1, 2, 3) for i in (1, 2)]
    speed = {"strong": 2.0, "middle": 1.1, "weak": 0.6}
    kernels = {}
    for name, factor in speed.items():
        submission = SubmissionFactory(llm=LLMFactory(name=name))
        for p in problems:
            kernel = KernelFactory(submission=submission, llm=submission.llm, problem=p)
            evaluation = EvaluationFactory(kernel=kernel, speedup=factor * (1 + p.problem_id / 10), memory_ratio=factor)
            # Speed-of-light fractions for the chart: strong's (1.32, 1.44) are above 1, i.e. flagged.
            sol = sol_record(0.6 * factor * (1 + p.problem_id / 10))
            store_result(evaluation, {**evaluation.result, "speed_of_light": sol})
            kernels[(name, p.pk)] = kernel
    for p in problems:
        BaselineFactory(problem=p, precision=Baseline.Precision.TF32, median_ms=1.0)
        BaselineFactory(problem=p, precision=Baseline.Precision.FP32, median_ms=1.8)
    cheat = KernelFactory(
        submission=SubmissionFactory(llm=LLMFactory(name="cheater")), problem=problems[0], source=HACKED_SOURCE
    )
    evaluation = EvaluationFactory(kernel=cheat, speedup=25.0, memory_ratio=1.0)
    for name in ("D1", "D2", "D3", "D4"):
        DistributionResultFactory(evaluation=evaluation, name=name)
    AuditFlagFactory(
        kernel=cheat,
        review_state=AuditFlag.Review.CONFIRMED,
        classes=["A1"],
        evidence=[
            {"lines": [8], "quote": "self.stream = torch.cuda.Stream()", "why": "private stream"},
            {"lines": "11-12", "quote": "with torch.cuda.stream(self.stream):", "why": "work leaves the timed stream"},
        ],
        rationale="Runs on a side stream, so CUDA events on the default stream stop before the work ends.",
    )
    return {"problems": problems, "kernels": kernels, "cheat": cheat}


CHARTS = ("chart-memory-speedup", "chart-speedup-cdf", "chart-decomposition", "chart-speed-of-light", "chart-heatmap")


def names(page) -> list[str]:
    return page.locator("table.board tbody tr[data-name]").evaluate_all("rows => rows.map(r => r.dataset.name)")


def test_leaderboard_sorts_and_filters(page, board, screenshot):
    page.goto("/")
    assert names(page)[0] == "strong"
    assert "cheater" in names(page)  # listed (attempted), with no correct problem it ranks last among LLMs
    # The default order is fast_1 over the whole set (the ranking rule); sort by the geomean column instead.
    assert page.locator('th[data-key="fast_1"]').get_attribute("aria-sort") == "descending"
    header = page.locator('th[data-key="speedup"]')
    header.locator("a").click()
    page.wait_for_url(re.compile(r"sort=-speedup"))
    header = page.locator('th[data-key="speedup"]')
    assert header.get_attribute("aria-sort") == "descending"
    header.locator("a").click()
    page.wait_for_url(re.compile(r"sort=speedup"))
    assert page.locator('th[data-key="speedup"]').get_attribute("aria-sort") == "ascending"
    llm_order = [n for n in names(page) if not n.startswith(("PyTorch", "torch"))]
    assert llm_order[:3] == ["weak", "middle", "strong"]
    page.locator('th[data-key="name"] a').click()
    page.wait_for_url(re.compile(r"sort=-name"))
    page.get_by_role("link", name="Level 2").click()
    page.wait_for_url(re.compile(r"level=2"))
    assert page.locator('nav.tabs a[aria-current="page"]').inner_text() == "Level 2"
    assert "sort=-name" in page.url  # the sort survives the level change
    assert page.locator("tr.baseline-row").count() == 2
    screenshot(page, "leaderboard-small")
    assert page.js_errors == []


def test_charts_render_and_heatmap_clicks_through(page, board):
    page.goto("/?level=1")
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart} .main-svg", timeout=15000)
    page.wait_for_selector('#chart-heatmap[data-click-bound="true"]')
    page.locator("#chart-heatmap").scroll_into_view_if_needed()
    box = page.locator("#chart-heatmap .nsewdrag").first.bounding_box()
    # Level 1 has two problems (rows) and four LLMs (columns, by name): cheater, middle, strong, weak.
    # Click the middle of the cell (row 2 = L1/2, column 3 = "strong").
    page.mouse.click(box["x"] + box["width"] * (2.5 / 4), box["y"] + box["height"] * 0.75)
    page.wait_for_url(re.compile(r"/kernels/\d+/$"))
    expected = board["kernels"][("strong", board["problems"][1].pk)].pk
    assert page.url.endswith(f"/kernels/{expected}/")
    assert page.js_errors == []


def test_inspector_on_a_confirmed_hack(page, board, screenshot):
    cheat = board["cheat"]
    page.goto(f"/kernels/{cheat.pk}/")
    assert page.locator("h1").inner_text().startswith(f"Kernel #{cheat.pk}: cheater")
    assert page.locator(".verdict-line .badge-hack").inner_text() == "confirmed hack"
    flag = page.locator("article.flag").first
    assert "Runs on a side stream" in flag.inner_text()
    # Evidence lines 8, 11 and 12 are highlighted in the kernel pane and linked from the flag.
    highlighted = page.locator("#kernel-source .hll").all_inner_texts()
    assert [t.strip() for t in highlighted] == [
        "self.stream = torch.cuda.Stream()",
        "with torch.cuda.stream(self.stream):",
        "return x.clamp_min(0)",
    ]
    flag.get_by_role("link", name="line 8").click()
    assert page.url.endswith("#k-8")
    assert page.locator("table.distributions tbody tr").count() == 4
    assert page.locator("#reference-source").is_visible() and page.locator("#source-diff").is_visible()
    page.goto(f"/kernels/{cheat.pk}/")
    screenshot(page, "inspector-hack", full_page=True)
    assert page.js_errors == []


def test_problem_and_llm_pages(page, board):
    problem = board["problems"][0]
    page.goto(f"/problems/{problem.pk}/")
    assert "L1/1 Op11" in page.locator("h1").inner_text()
    rows = page.locator("table.kernels tbody tr")
    assert rows.count() == 4
    assert "confirmed hack" in rows.nth(3).inner_text().lower()  # ranked last, with its badge
    assert "PyTorch TF32" in page.content()
    page.get_by_role("link", name="strong").first.click()
    page.wait_for_url(re.compile(r"/llms/\d+/"))
    assert page.locator("h1").inner_text() == "strong"
    assert page.locator("#llm-metrics tbody tr").count() == 4  # overall + three levels
    page.wait_for_selector("#chart-speedup-cdf .main-svg", timeout=15000)
    assert page.js_errors == []


@pytest.mark.slow
def test_seeded_leaderboard_screenshot(page, screenshot, problems_jsonl):
    call_command("seed_demo_results", llms=10, problems=60, samples=3, problems_jsonl=problems_jsonl)
    page.goto("/")
    assert page.locator("p.banner.warn").inner_text().startswith("Synthetic demo data.")
    assert len([n for n in names(page) if n.startswith("synthetic-")]) == 10
    page.wait_for_selector("#chart-heatmap .main-svg", timeout=20000)
    screenshot(page, "leaderboard-seeded", full_page=False)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the table scrolls inside its box
    page.reload()
    overflow = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert overflow, "the page itself must not scroll sideways on a phone"
    screenshot(page, "leaderboard-phone")


@pytest.mark.parametrize("sort", ["", "?sort=speedup"])
def test_board_rows_read_in_one_order_at_every_width(page, board, sort):
    """The same board in the same order on a laptop and a phone (the phone's cards once moved the baselines to the
    end while the laptop sorted them among the LLMs): the LLMs as sorted, then PyTorch's baselines."""
    orders = {}
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/" + sort)
        rows = page.locator("#board tbody tr[data-name]").evaluate_all(
            "rs => rs.map(r => [r.getBoundingClientRect().top, r.dataset.name, r.classList.contains('baseline-row')])"
        )
        orders[width] = [(name, is_baseline) for _, name, is_baseline in sorted(rows)]  # as seen, top to bottom
    assert orders[1400] == orders[390]
    kinds = [is_baseline for _, is_baseline in orders[1400]]
    assert kinds == sorted(kinds) and kinds.count(True) == 2  # every LLM above every baseline
    group = page.locator("#baseline-group")
    assert "not ranked" in group.inner_text() and group.is_visible()
