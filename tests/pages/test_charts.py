"""The chart functions are pure: rows in, Plotly figure out."""

from __future__ import annotations

from collections import Counter

from leaderboard import charts
from leaderboard.selectors.ranking import Cell, LeaderboardRow


def test_heatmap_cells_carry_kernel_urls_and_log_speedups():
    problems = {10: (1, 2, "B"), 11: (1, 1, "A")}
    llms = {1: "zeta", 2: "alpha"}
    cells = {10: {1: Cell(kernel_id=7, speedup=4.0, memory_ratio=1.0)}, 11: {2: Cell(8, 0.5, None)}}
    fig = charts.heatmap_figure(problems, llms, cells, lambda k: f"/kernels/{k}/")
    trace = fig.data[0]
    assert list(trace.y) == ["L1/1 A", "L1/2 B"]  # problems in (level, id) order
    assert list(trace.x) == ["alpha", "zeta"]
    assert [list(r) for r in trace.z] == [[-1.0, None], [None, 2.0]]
    assert [list(r) for r in trace.customdata] == [["/kernels/8/", ""], ["", "/kernels/7/"]]
    html = charts.to_fragment(fig, "chart-heatmap")
    assert 'id="chart-heatmap"' in html and "<script" in html and "cdn.plot.ly" not in html


def test_cdf_is_monotonic_and_ends_at_one():
    fig = charts.speedup_cdf_figure({"m": [2.0, 0.5, 1.0, None]})
    (trace,) = fig.data
    assert list(trace.x) == [0.5, 1.0, 2.0]
    assert list(trace.y) == [1 / 3, 2 / 3, 1.0]


def test_decomposition_shares_sum_to_one_per_level():
    counters = charts.level_counters(
        {1: {1: Counter(tf32_only=1, neither=3)}, 2: {1: Counter(hidden_only=2, both=2), 2: Counter(neither=4)}},
        [1, 2],
    )
    assert list(counters) == ["Level 1", "Level 2", "Overall"]
    fig = charts.decomposition_figure(counters)
    for i in range(3):
        assert abs(sum(trace.y[i] for trace in fig.data) - 1.0) < 1e-9
    tf32 = next(t for t in fig.data if t.name == "TF32 baseline only")
    assert list(tf32.customdata) == [1, 0, 1]


def test_scatter_skips_baselines_and_llms_without_results():
    rows = [
        LeaderboardRow(kind="llm", name="a", level=1, speedup=1.2, memory_efficiency=0.9),
        LeaderboardRow(kind="llm", name="b", level=1, speedup=None),
        LeaderboardRow(kind="baseline", name="PyTorch", level=1, speedup=1.0, memory_efficiency=1.0),
    ]
    fig = charts.memory_speedup_figure({1: rows})
    assert list(fig.data[0].text) == ["a"]


def test_log_axes_label_every_tick_in_full():
    """Plotly's own minor ticks on a log axis read '2 3 4 ... 1': the charts choose their ticks and label them."""
    from leaderboard.chart_axes import log_axis

    axis = log_axis([0.15, 0.3, 3.0], pad=0.05)
    assert axis["type"] == "log" and axis["ticktext"] == ["0.2", "0.3", "0.5", "1", "2", "3"]
    assert axis["tickvals"] == [0.2, 0.3, 0.5, 1.0, 2.0, 3.0]
    wide = log_axis([1e-4, 1e4], pad=0.0)["ticktext"]  # eight decades: every other power of ten
    assert wide == ["0.0001", "0.01", "1", "100", "10000"]
    assert log_axis([0.05, 0.5], pad=0.0, percent=True)["ticktext"][:2] == ["5\u202f%", "10\u202f%"]
    assert log_axis([None, 0.0], pad=0.1) == {"type": "log"}  # nothing positive: Plotly's defaults
    narrow = log_axis([1.01, 1.02], pad=0.001)  # no round tick inside: Plotly's ticks, labelled in full
    assert "tickvals" not in narrow and narrow["tickformat"]
    fig = charts.speedup_cdf_figure({"m": [0.15, 0.3, 3.0]})
    assert list(fig.layout.xaxis.ticktext) == ["0.2", "0.3", "0.5", "1", "2", "3"]


def test_a_chart_with_nothing_to_draw_is_left_out_and_the_page_says_why(client, add_sample):
    from tests.factories import ProblemFactory

    for i, speedup in enumerate((0.5, 0.9, 1.3)):  # a CPU board: speedups, no device memory, no speed of light
        add_sample("cpu-llm", ProblemFactory(problem_id=i + 1), speedup=speedup, memory=None, hardware="cpu")
    html = client.get("/?hardware=cpu").content.decode()
    left_out = html.split('id="charts-left-out"')[1].split("</ul>")[0]
    assert "Memory vs speedup, per level</strong> is not drawn here: these results carry no peak-memory" in left_out
    assert "Speed of light per LLM</strong> is not drawn here" in left_out
    assert 'id="chart-memory-speedup"' not in html and 'id="chart-speed-of-light"' not in html
    assert "Nothing to plot" not in html  # no empty card
    assert 'id="chart-speedup-cdf"' in html and 'id="chart-heatmap"' in html  # what can be drawn still is
