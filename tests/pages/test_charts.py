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
