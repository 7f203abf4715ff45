"""Numbers that read right, one verdict per evaluation, readable result records, badges that mean
something, charts that say why they are empty, level tabs only for levels with problems."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template import Context, Template
from django.urls import reverse

from evaluator.models import AuditFlag, Evaluation
from leaderboard import charts
from leaderboard.selectors.ranking import Cell, LeaderboardRow
from leaderboard.templatetags import kb_format
from leaderboard.templatetags.kb_format import readable, times
from tests.factories import AuditFlagFactory, DistributionResultFactory, ProblemFactory

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.00123, "0.00123×"), (1.2345, "1.23×"), (121.8, "122×"), (4.0, "4.00×"), (0.29, "0.290×"), (9.996, "10.0×")],
)
def test_speedups_read_in_significant_figures_with_one_sign(value, text):
    assert times(value) == text


def render_speedup(**kwargs) -> str:
    args = " ".join(f"{k}=v_{k}" for k in kwargs)
    context = Context({f"v_{k}": v for k, v in kwargs.items()})
    return Template("{% load kb_format %}{% speedup value low high " + args + " %}").render(
        Context({"value": 0.00123, "low": 0.00110, "high": 0.00130, **context.flatten()})
    )


def test_speedup_cell_shows_ci_and_bold_only_when_counted():
    html = render_speedup(hardware="h200", counted=True)
    assert '<strong class="speedup">0.00123×</strong>' in html and "(CI 0.00110×–0.00130×)" in html
    assert "noisy" not in html and "CPU" not in html
    assert "<strong" not in render_speedup(hardware="h200", counted=False)


def test_wide_intervals_are_noisy_and_cpu_timings_say_so():
    html = Template("{% load kb_format %}{% speedup 4.0 0.29 121.8 hardware='cpu' %}").render(Context())
    assert "noisy" in html and ">CPU<" in html


def verdict(**fields) -> str:
    """The verdict label of an unsaved finished evaluation with these fields (an incorrect, unranked one by default)."""
    defaults = {"status": "done", "result_status": "ok", "correct": False, "result": None}
    evaluation = Evaluation(**(defaults | {k: v for k, v in fields.items() if k not in ("eligible", "failed")}))
    if "eligible" in fields:
        evaluation.eligible = fields["eligible"]  # the rankings' annotation (evaluator.selectors.eligibility)
    return evaluation.verdict_label(failed=fields.get("failed")).label


def test_one_verdict_per_evaluation():
    assert verdict(correct=True, eligible=True) == "Verified"
    assert verdict(failed=["D4"]) == "Incorrect: D4 (×−1) failed"
    assert verdict(failed=["D1", "D2", "D3", "D4"]) == "Incorrect: D1–D4 all failed"
    record = {"distributions": [{"name": "D2", "passed": False}, {"name": "D3", "passed": None, "skipped": True}]}
    assert verdict(result=record) == "Incorrect: D2 (×3) failed"
    timed = {"timed_outputs": {"name": "timed outputs", "passed": False, "skipped": False}}
    assert verdict(result=timed) == "Incorrect: timed outputs failed"  # as the inspector says it
    assert verdict(result_status="timeout") == "Timeout"
    assert verdict(result_status="runtime_error") == "Runtime error"
    assert verdict(status="failed") == "Not evaluated"
    assert verdict() == "Incorrect"


def test_the_verdict_is_the_evaluations_not_a_template_tags():
    """Pages read `Evaluation.verdict_label()`; no template tag library computes a verdict."""
    assert not hasattr(kb_format, "verdict_of") and "verdict" not in kb_format.register.tags
    for template in (REPO / "templates").rglob("*.html"):
        assert "{% verdict " not in template.read_text(), template


def test_readable_record_values():
    assert readable(None) == "—"
    assert (
        readable({"quick": False, "trials": 2, "tol": {"verified": 0.001}})
        == "quick: no; trials: 2; tol: verified: 0.001"
    )


@pytest.fixture
def wrong_cpu_kernel(add_sample):
    problem = ProblemFactory(level=1, problem_id=19, name="ReLU")
    record = {
        "status": "ok",
        "correct": False,
        "timing": {"candidate": {"median_ms": 0.5, "calls": None, "blocks": {"n": 4, "cv": None}}},
        "environment": {"device": "cpu", "cuda": None, "options": {"quick": False, "verified_trials": 2},
                        "seeds_digest": "f" * 64},
    }  # fmt: skip
    evaluation = add_sample(
        "cpu-llm", problem, speedup=121.8, correct=False, hardware="cpu", result=record,
        speedup_ci_low=0.29, speedup_ci_high=121.8, result_status="ok",
    )  # fmt: skip
    for name in ("D1", "D2", "D3"):
        DistributionResultFactory(evaluation=evaluation, name=name, passed=True)
    DistributionResultFactory(evaluation=evaluation, name="D4", passed=False)
    return evaluation


def test_inspector_says_one_verdict_and_renders_the_record_readably(client, wrong_cpu_kernel):
    html = client.get(reverse("inspector:kernel-detail", args=[wrong_cpu_kernel.kernel_id])).content.decode()
    assert "Incorrect: D4 (×−1) failed" in html
    assert "Done" not in html and "· OK" not in html
    assert '<strong class="speedup">' not in html  # an incorrect kernel has no bold speedup
    assert "noisy" in html and ">CPU<" in html
    env = html[html.index('id="env-heading"') :]
    assert "None" not in env and "{" not in env and "quick: no" not in env  # nested: a table, not a dict
    assert "<dt>quick</dt>" in env
    timing = html[html.index('id="timing-heading"') : html.index('id="env-heading"')]
    assert "None" not in timing and "{" not in timing and "n: 4; cv: —" in timing
    assert "D4 (×−1)" in html and "inputs negated" in html  # D1-D4 explained where shown


def test_kernel_lists_show_the_verdict_and_cpu_label(client, wrong_cpu_kernel):
    html = client.get(reverse("leaderboard:problem-detail", args=[wrong_cpu_kernel.kernel.problem_id])).content
    html = html.decode()
    assert "Incorrect" in html and ">CPU<" in html and "noisy" in html
    assert '<strong class="speedup">' not in html


@pytest.mark.parametrize(("severity", "badge"), [("info", False), ("low", False), ("medium", True), ("high", True)])
def test_flagged_badge_only_for_medium_severity_and_above(client, add_sample, severity, badge):
    evaluation = add_sample("m", ProblemFactory(level=1, problem_id=1))
    AuditFlagFactory(kernel=evaluation.kernel, review_state=AuditFlag.Review.SUSPECTED, severity=severity)
    html = client.get(reverse("leaderboard:problem-detail", args=[evaluation.kernel.problem_id])).content.decode()
    assert (">flagged</span>" in html) is badge


def test_board_states_its_ranking_rule_and_repeat_policy(client, add_sample):
    add_sample("m", ProblemFactory(level=1, problem_id=1), hardware="cpu")
    html = client.get(reverse("leaderboard:index"), {"hardware": "cpu"}).content.decode()
    rule = re.search(r'<p class="rule" id="ranking-rule">(.*?)</p>', html, re.S).group(1)
    assert "Ranked by fast_1 over the whole problem set" in rule and "median" in rule
    assert "CPU timings." in html  # the board says its speedups are CPU timings
    assert "Coverage" in html


def test_level_tabs_only_for_levels_with_problems(client, add_sample):
    add_sample("m", ProblemFactory(level=1, problem_id=1))
    html = client.get(reverse("leaderboard:index")).content.decode()
    tabs = re.search(r'<nav class="tabs" aria-label="Level">(.*?)</nav>', html, re.S).group(1)
    assert "Level 1" in tabs and "Level 2" not in tabs and "Level 3" not in tabs


def test_empty_charts_say_why():
    cpu_rows = {1: [LeaderboardRow(kind="llm", name="a", level=1, speedup=1.2, memory_efficiency=None)]}
    html = charts.to_fragment(charts.memory_speedup_figure(cpu_rows), "chart-memory-speedup")
    assert html.startswith('<p class="chart-empty" id="chart-memory-speedup">') and "peak-memory" in html
    assert "at least two correct problems" in charts.to_fragment(charts.speedup_cdf_figure({"a": [1.5]}), "c")
    assert "chart-empty" in charts.to_fragment(charts.decomposition_figure({}), "d")
    assert "chart-empty" in charts.to_fragment(charts.heatmap_figure({}, {}, {}, str), "h")


def test_heatmap_marks_failed_hacked_and_missing_cells():
    problems = {10: (1, 1, "A"), 11: (1, 2, "B"), 12: (1, 3, "C")}
    llms = {1: "m"}
    cells = {10: {1: Cell(7, 1.0, None)}}
    fig = charts.heatmap_figure(problems, llms, cells, lambda k: f"/kernels/{k}/", {11: {1: "hack"}})
    speed, missing = fig.data
    assert [list(r) for r in speed.z] == [[0.0], [None], [None]]
    assert [list(r) for r in missing.text] == [[""], ["hack"], ["–"]]
    assert fig.layout.yaxis.tickfont.size >= 12


def test_chart_fragments_are_drawn_after_layout():
    fig = charts.speedup_cdf_figure({"a": [1.5, 2.0]})
    html = charts.to_fragment(fig, "chart-speedup-cdf")
    assert 'class="plotly-graph-div js-plotly"' in html and 'type="application/json"' in html
    assert "Plotly.newPlot" not in html  # static/js/charts.js draws it once the grid has its columns
    assert "%{x:.3g}×" in html and "}x" not in html  # one multiplication sign, as in the tables
