"""Plotly charts for the leaderboard and LLM pages: pure functions from computed rows to HTML fragments.

Nothing here touches the database. plotly.js itself is served once by the app (see `views.plotly_js`), so every
fragment is rendered with `include_plotlyjs=False`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import plotly.graph_objects as go

from leaderboard.selectors.ranking import DECOMPOSITION_KEYS, LEVELS, Cell, LeaderboardRow

DECOMPOSITION_LABELS = {
    "tf32_only": "TF32 baseline only",
    "hidden_only": "Hidden tests only",
    "both": "Both",
    "neither": "Neither",
}
DECOMPOSITION_COLOURS = {"tf32_only": "#0b5cad", "hidden_only": "#cf222e", "both": "#8250df", "neither": "#afb8c1"}
LEVEL_COLOURS = {1: "#0b5cad", 2: "#bf3989", 3: "#1a7f37"}
PLOTLY_CONFIG = {"responsive": True, "displaylogo": False}


def to_fragment(fig: go.Figure, div_id: str) -> str:
    """An embeddable <div> + <script> for one figure (plotly.js is loaded separately, once per page)."""
    fig.update_layout(margin={"l": 60, "r": 20, "t": 50, "b": 50}, font={"family": "system-ui, sans-serif"})
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=PLOTLY_CONFIG)


def memory_speedup_figure(rows_by_level: Mapping[int, Sequence[LeaderboardRow]]) -> go.Figure:
    """Memory efficiency against Correct Speedup, one dot per LLM, one trace per level."""
    fig = go.Figure()
    for level, rows in sorted(rows_by_level.items()):
        points = [r for r in rows if not r.is_baseline and r.speedup and r.memory_efficiency]
        fig.add_trace(
            go.Scatter(
                x=[r.speedup for r in points],
                y=[r.memory_efficiency for r in points],
                text=[r.name for r in points],
                mode="markers+text",
                textposition="top center",
                name=f"Level {level}",
                marker={"size": 11, "color": LEVEL_COLOURS.get(level)},
                hovertemplate="%{text}<br>speedup %{x:.2f}x<br>memory ratio %{y:.2f}x<extra>Level "
                + str(level)
                + "</extra>",
            )
        )
    fig.add_vline(x=1, line_dash="dot", line_color="#57606a")
    fig.add_hline(y=1, line_dash="dot", line_color="#57606a")
    fig.update_xaxes(type="log", title="Correct Speedup vs PyTorch TF32 (geomean, log)")
    fig.update_yaxes(type="log", title="Memory efficiency (baseline / kernel peak, log)")
    fig.update_layout(title="Memory vs speedup, per level", height=460, legend={"orientation": "h"})
    return fig


def speedup_cdf_figure(speedups_by_llm: Mapping[str, Sequence[float]]) -> go.Figure:
    """Empirical CDF of the chosen kernels' speedups, one line per LLM (correct problems only)."""
    fig = go.Figure()
    for name, values in sorted(speedups_by_llm.items()):
        xs = sorted(v for v in values if v and v > 0)
        if not xs:
            continue
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line_shape="hv",
                name=name,
                hovertemplate="%{x:.2f}x: %{y:.0%} of correct problems<extra>" + name + "</extra>",
            )
        )
    fig.add_vline(x=1, line_dash="dot", line_color="#57606a")
    fig.update_xaxes(type="log", title="Speedup vs PyTorch TF32 (log)")
    fig.update_yaxes(title="Share of correct problems at or below", tickformat=".0%", range=[0, 1.02])
    fig.update_layout(title="Speedup CDF per LLM", height=420)
    return fig


def decomposition_figure(counts_by_level: Mapping[str, Counter]) -> go.Figure:
    """Stacked shares of problems whose verdict changes under the TF32 baseline, the hidden tests, both or neither."""
    labels = list(counts_by_level)
    totals = [sum(counts_by_level[label].values()) or 1 for label in labels]
    fig = go.Figure()
    for key in DECOMPOSITION_KEYS:
        counts = [counts_by_level[label][key] for label in labels]
        fig.add_trace(
            go.Bar(
                x=labels,
                y=[c / t for c, t in zip(counts, totals, strict=True)],
                customdata=counts,
                name=DECOMPOSITION_LABELS[key],
                marker_color=DECOMPOSITION_COLOURS[key],
                hovertemplate="%{y:.1%} (%{customdata} problems)<extra>" + DECOMPOSITION_LABELS[key] + "</extra>",
            )
        )
    fig.update_layout(barmode="stack", title="What changes the verdict: TF32 baseline vs hidden tests", height=400)
    fig.update_yaxes(tickformat=".0%", title="Share of attempted (LLM, problem) pairs")
    return fig


def heatmap_figure(
    problems: Mapping[int, tuple[int, int, str]],
    llms: Mapping[int, str],
    cells: Mapping[int, Mapping[int, Cell]],
    kernel_url: Callable[[int], str],
) -> go.Figure:
    """Problems x LLMs, cell = speedup of the chosen eligible kernel (log2 colour, 1x = white); a click opens it."""
    problem_ids = sorted(problems, key=lambda pk: problems[pk][:2])
    llm_ids = sorted(llms, key=lambda i: llms[i].lower())
    y = [f"L{problems[pk][0]}/{problems[pk][1]} {problems[pk][2]}"[:48] for pk in problem_ids]
    x = [llms[i] for i in llm_ids]
    z, text, links = [], [], []
    for pk in problem_ids:
        row_z, row_text, row_links = [], [], []
        for llm_id in llm_ids:
            cell = cells.get(pk, {}).get(llm_id)
            if cell and cell.speedup:
                row_z.append(max(-4.0, min(4.0, math.log2(cell.speedup))))
                row_text.append(f"{cell.speedup:.2f}x")
                row_links.append(kernel_url(cell.kernel_id))
            else:
                row_z.append(None)
                row_text.append("no correct kernel")
                row_links.append("")
        z.append(row_z)
        text.append(row_text)
        links.append(row_links)
    ticks = [-3, -2, -1, 0, 1, 2, 3]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=x,
            y=y,
            text=text,
            customdata=links,
            colorscale="RdBu",
            zmid=0,
            zmin=-4,
            zmax=4,
            xgap=1,
            ygap=1,
            hovertemplate="%{y}<br>%{x}: %{text}<extra></extra>",
            colorbar={"title": "speedup", "tickvals": ticks, "ticktext": [f"{2.0**t:g}x" for t in ticks]},
        )
    )
    fig.update_yaxes(autorange="reversed", tickfont={"size": 9})
    fig.update_xaxes(side="top")
    fig.update_layout(
        title="Per-problem speedup (click a cell to inspect the kernel)",
        height=max(420, 14 * len(problem_ids) + 160),
    )
    return fig


def level_counters(decomposition: Mapping[int, Mapping[int, Counter]], llm_ids: Sequence[int]) -> dict[str, Counter]:
    """Sum the per-LLM decomposition into 'Level 1'..'Level 3' and 'Overall' counters for the chosen LLMs."""
    out: dict[str, Counter] = {f"Level {level}": Counter() for level in LEVELS}
    for llm_id in llm_ids:
        for level, counter in decomposition.get(llm_id, {}).items():
            out[f"Level {level}"].update(counter)
    out["Overall"] = sum(out.values(), Counter())
    return {k: v for k, v in out.items() if sum(v.values())}
