"""The speed-of-light chart: per LLM, the speed-of-light fractions of its chosen kernels, with those above 1 flagged."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluator.harness.orchestrator.roofline import speed_of_light
from leaderboard import charts
from leaderboard.selectors.ranking import Cell
from tests.factories import ProblemFactory

COUNTS = {"matrix_flops": 0, "vector_flops": 1 << 20, "bytes": 8 << 20, "dtype": "float32"}
BOUND_MS = 8 * 2**20 / 4.8e12 * 1e3  # memory-bound on the H200: 8 MiB at 4.8 TB/s


def test_speed_of_light_boxes_per_llm_and_flags_fractions_above_one():
    problems = {10: (1, 1, "A"), 11: (1, 2, "B"), 12: (2, 1, "C")}
    llms = {1: "zeta", 2: "alpha", 3: "cpu-only"}
    cells = {
        10: {1: Cell(7, 2.0, None, sol=0.25), 2: Cell(8, 1.0, None, sol=1.6), 3: Cell(9, 1.0, None)},
        11: {1: Cell(17, 2.0, None, sol=0.5), 2: Cell(18, 1.0, None, sol=0.01)},
        12: {1: Cell(27, 0.5, None)},  # no fraction (e.g. an unknown GPU): not drawn
    }
    fig = charts.speed_of_light_figure(problems, llms, cells, lambda k: f"/kernels/{k}/")
    boxes = [t for t in fig.data if t.type == "box"]
    assert [b.name for b in boxes] == ["alpha", "zeta"]  # by name; an LLM without fractions gets no box
    alpha, zeta = boxes
    assert list(alpha.y) == [1.6, 0.01] and list(zeta.y) == [0.25, 0.5]
    assert list(zeta.text) == ["L1/1 A", "L1/2 B"] and list(zeta.customdata) == ["/kernels/7/", "/kernels/17/"]
    assert alpha.boxpoints == "all"
    (flagged,) = [t for t in fig.data if t.type == "scatter"]
    assert "flagged" in flagged.name and list(flagged.x) == ["alpha"] and list(flagged.y) == [1.6]
    assert list(flagged.customdata) == ["/kernels/8/"]
    assert [(s.y0, s.y1) for s in fig.layout.shapes] == [(1, 1)]  # the reference line at 1.0
    assert fig.layout.yaxis.type == "log"
    html = charts.to_fragment(fig, "chart-speed-of-light")
    assert 'id="chart-speed-of-light"' in html and 'class="plotly-graph-div js-plotly"' in html


def test_speed_of_light_without_fractions_says_why():
    fig = charts.speed_of_light_figure({10: (1, 1, "A")}, {1: "m"}, {10: {1: Cell(7, 2.0, None)}}, str)
    html = charts.to_fragment(fig, "chart-speed-of-light")
    assert html.startswith('<p class="chart-empty" id="chart-speed-of-light">')
    assert "no GPU evaluations with known device peaks yet" in html
    assert "chart-empty" in charts.to_fragment(charts.speed_of_light_figure({}, {}, {}, str), "s")


@pytest.mark.django_db
def test_leaderboard_page_draws_the_speed_of_light_chart(client, add_sample):
    problem = ProblemFactory(level=1, problem_id=1, name="GELU")
    for name, kernel_ms in (("near-light", 0.01), ("too-fast", BOUND_MS / 2)):
        record = {"status": "ok", "correct": True, "speedup": 2.0}
        record["speed_of_light"] = speed_of_light(COUNTS, "NVIDIA H200", kernel_ms)
        add_sample(name, problem, speedup=2.0, result=record, candidate_ms=kernel_ms)
    params = {"hardware": "h200", "problem_set": problem.problem_set}
    html = client.get(reverse("leaderboard:index"), params).content.decode()
    assert '<div id="chart-speed-of-light" class="plotly-graph-div js-plotly"' in html
    chart = html.split('<script type="application/json" id="chart-speed-of-light-spec">')[1].split("</script>")[0]
    assert "near-light" in chart and "too-fast" in chart and "flagged: faster than the bound" in chart
    assert "Speed of light per LLM" in html


@pytest.mark.django_db
def test_cpu_board_leaves_the_speed_of_light_chart_out_and_says_why(client, add_sample):
    add_sample("m", ProblemFactory(level=1, problem_id=1), hardware="cpu")
    html = client.get(reverse("leaderboard:index"), {"hardware": "cpu"}).content.decode()
    assert 'id="chart-speed-of-light"' not in html  # no empty card
    left_out = html.split('id="charts-left-out"')[1].split("</ul>")[0]
    assert "Speed of light per LLM</strong> is not drawn here: no GPU evaluations with known device peaks" in left_out
