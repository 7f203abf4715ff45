"""Plotly charts for the leaderboard and LLM pages: pure functions from computed rows to HTML fragments.

Nothing here touches the database. plotly.js itself is served once by the app (see `views.plotly_js`). A fragment
is a <div> plus its figure as JSON; static/js/charts.js draws every figure once the page is laid out, so Plotly
sizes it to its card (drawing inline, before the grid had its columns, drew a 1,353 px chart in a 661 px card).
A figure with nothing to show becomes one sentence saying why (`empty_figure`), not a pair of empty axes.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from leaderboard.chart_axes import log_axis
from leaderboard.selectors.ranking import DECOMPOSITION_KEYS, LEVELS, Cell, LeaderboardRow
from leaderboard.templatetags.kb_format import significant

DECOMPOSITION_LABELS = {
    "tf32_only": "TF32 baseline only",
    "hidden_only": "Hidden tests only",
    "both": "Both",
    "neither": "Neither",
}
DECOMPOSITION_COLOURS = {"tf32_only": "#0b5cad", "hidden_only": "#cf222e", "both": "#8250df", "neither": "#afb8c1"}
LEVEL_COLOURS = {1: "#0b5cad", 2: "#bf3989", 3: "#1a7f37"}
# The mode bar stays off until hovered, and charts.js turns it off on touch screens and narrow windows, where it
# covered the chart titles.
PLOTLY_CONFIG = {"responsive": True, "displaylogo": False, "displayModeBar": "hover"}
TIMES = "\u00d7"
INCORRECT, HACK, NOT_ATTEMPTED = "incorrect", "hack", "not attempted"
# Cells of the heat map that hold no speedup: a marker colour and a symbol each, so none reads as ~1x (white).
MISSING_CELLS = {
    NOT_ATTEMPTED: (0, "#d0d7de", "\u2013", "not attempted"),
    INCORRECT: (1, "#6e7781", "\u2717", "attempted, no correct kernel"),
    HACK: (2, "#1b1f24", "hack", "confirmed reward hack, not ranked"),
}


def empty_figure(reason: str) -> go.Figure:
    """A figure that stands for 'nothing to draw': to_fragment renders `reason` as a sentence instead."""
    return go.Figure(layout={"meta": {"empty": reason}})


def empty_reason(fig: go.Figure) -> str | None:
    meta = fig.layout.meta
    return meta.get("empty") if isinstance(meta, dict) else None


@dataclass(frozen=True)
class Fragment:
    """One chart card's content: its title, the figure's <div> (or the sentence saying why it is empty), and that
    reason alone ("" when something is drawn), so a page can leave an empty card out and say why in one line."""

    title: str
    html: str
    empty: str = ""


def fragment(fig: go.Figure, div_id: str, title: str) -> Fragment:
    reason = empty_reason(fig) or ""
    return Fragment(title, to_fragment(fig, div_id), reason.removeprefix("Nothing to plot: "))


def to_fragment(fig: go.Figure, div_id: str) -> str:
    """A <div> and its figure as JSON (drawn by static/js/charts.js after layout), or a sentence for an empty chart."""
    if reason := empty_reason(fig):
        return format_html('<p class="chart-empty" id="{}">{}</p>', div_id, reason)
    # The title goes in the page (an <h3> in the card, see _charts.html), where it wraps on a phone and no mode
    # bar covers it.
    fig.update_layout(
        title=None,
        autosize=True,
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        font={"family": "system-ui, sans-serif"},
        modebar={"orientation": "v"},
    )
    # JSON inside <script type="application/json">: "<" escaped so no "</script>" can end it early.
    spec = json.dumps({**json.loads(fig.to_json()), "config": PLOTLY_CONFIG}, ensure_ascii=False)
    spec = spec.replace("<", "\\u003c")
    return format_html(
        '<div id="{}" class="plotly-graph-div js-plotly" data-spec="{}-spec"></div>'
        '<script type="application/json" id="{}-spec">{}</script>',
        div_id,
        div_id,
        div_id,
        mark_safe(spec),  # JSON with "<" escaped
    )


def _label_side(value: float | None, log_range: list[float] | None) -> str:
    """Where a point's label goes: inwards near either end of the x axis, above the point elsewhere."""
    if not log_range or not value or value <= 0:
        return "top center"
    where = (math.log10(value) - log_range[0]) / ((log_range[1] - log_range[0]) or 1.0)
    return "top left" if where > 0.7 else "top right" if where < 0.3 else "top center"


def memory_speedup_figure(rows_by_level: Mapping[int, Sequence[LeaderboardRow]]) -> go.Figure:
    """Memory efficiency against Correct Speedup, one dot per LLM, one trace per level."""
    llm_rows = [r for rows in rows_by_level.values() for r in rows if not r.is_baseline]
    if not any(r.speedup for r in llm_rows):
        return empty_figure("Nothing to plot: no LLM has a correct kernel here yet.")
    if not any(r.speedup and r.memory_efficiency for r in llm_rows):
        return empty_figure(
            "Nothing to plot: these results carry no peak-memory figures (CPU runs measure no device memory),"
            " so memory cannot be set against speedup."
        )
    fig = go.Figure()
    plotted = [
        r for rows in rows_by_level.values() for r in rows if not r.is_baseline and r.speedup and r.memory_efficiency
    ]
    x_axis = log_axis([r.speedup for r in plotted], pad=0.3)
    x_range = x_axis.get("range")
    for level, rows in sorted(rows_by_level.items()):
        points = [r for r in rows if not r.is_baseline and r.speedup and r.memory_efficiency]
        if not points:
            continue
        fig.add_trace(
            go.Scatter(
                x=[r.speedup for r in points],
                y=[r.memory_efficiency for r in points],
                text=[r.name for r in points],
                mode="markers+text",
                # A name near an edge reads inwards, and is drawn past the axes rather than cut at them.
                textposition=[_label_side(r.speedup, x_range) for r in points],
                cliponaxis=False,
                name=f"Level {level}",
                marker={"size": 11, "color": LEVEL_COLOURS.get(level)},
                hovertemplate="%{text}<br>speedup %{x:.3g}×<br>memory ratio %{y:.3g}×<extra>Level "
                + str(level)
                + "</extra>",
            )
        )
    fig.add_vline(x=1, line_dash="dot", line_color="#57606a")
    fig.add_hline(y=1, line_dash="dot", line_color="#57606a")
    fig.update_xaxes(title="Correct Speedup vs PyTorch TF32 (geomean, log)", **x_axis)
    fig.update_yaxes(
        title="Memory efficiency (baseline / kernel peak, log)",
        **log_axis([r.memory_efficiency for r in plotted], pad=0.2),
    )
    fig.update_layout(title="Memory vs speedup, per level", height=460, legend={"orientation": "h"})
    return fig


def speedup_cdf_figure(speedups_by_llm: Mapping[str, Sequence[float | None]]) -> go.Figure:
    """Empirical CDF of the chosen kernels' speedups, one line per LLM (correct problems only). An LLM with fewer
    than two correct problems has no distribution to draw and is left out."""
    series = {name: sorted(v for v in values if v and v > 0) for name, values in speedups_by_llm.items()}
    series = {name: xs for name, xs in series.items() if len(xs) >= 2}
    if not series:
        return empty_figure(
            "Nothing to plot: a distribution of speedups needs at least two correct problems per LLM, and no LLM"
            " has more than one here."
        )
    fig = go.Figure()
    for name, xs in sorted(series.items()):
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line_shape="hv",
                name=name,
                hovertemplate="%{x:.3g}×: %{y:.0%} of correct problems<extra>" + name + "</extra>",
            )
        )
    fig.add_vline(x=1, line_dash="dot", line_color="#57606a")
    fig.update_xaxes(
        title="Speedup vs PyTorch TF32 (log)", **log_axis([x for xs in series.values() for x in xs], pad=0.05)
    )
    fig.update_yaxes(title="Share of correct problems at or below", tickformat=".0%", range=[0, 1.02])
    fig.update_layout(title="Speedup CDF per LLM", height=420)
    return fig


def decomposition_figure(counts_by_level: Mapping[str, Counter]) -> go.Figure:
    """Stacked shares of problems whose verdict changes under the TF32 baseline, the hidden tests, both or neither."""
    labels = [label for label in counts_by_level if sum(counts_by_level[label].values())]
    if not labels:
        return empty_figure("Nothing to plot: no (LLM, problem) pair has been evaluated here yet.")
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


def _short(name: str, limit: int = 24) -> str:
    """Row labels short enough to leave the cells room on a phone."""
    return name if len(name) <= limit else name[: limit - 1] + "\u2026"


def heatmap_figure(
    problems: Mapping[int, tuple[int, int, str]],
    llms: Mapping[int, str],
    cells: Mapping[int, Mapping[int, Cell]],
    kernel_url: Callable[[int], str],
    failures: Mapping[int, Mapping[int, str]] | None = None,
) -> go.Figure:
    """Problems x LLMs, cell = speedup of the chosen eligible kernel (log2 colour, 1x = white); a click opens it.

    Cells without a speedup are drawn by a second trace in grey with a symbol (incorrect, confirmed hack, not
    attempted), so that none of them reads as white, i.e. as ~1x."""
    if not problems or not llms:
        return empty_figure("Nothing to plot: no problem has results here yet.")
    failures = failures or {}
    problem_ids = sorted(problems, key=lambda pk: problems[pk][:2])
    llm_ids = sorted(llms, key=lambda i: llms[i].lower())
    y = [f"L{problems[pk][0]}/{problems[pk][1]} {_short(problems[pk][2])}" for pk in problem_ids]
    x = [llms[i] for i in llm_ids]
    z, text, links, missing_z, missing_text, missing_hover = [], [], [], [], [], []
    for pk in problem_ids:
        row_z: list[float | None] = []
        row_mz: list[float | None] = []
        row_text, row_links, row_mt, row_mh = [], [], [], []
        for llm_id in llm_ids:
            cell = cells.get(pk, {}).get(llm_id)
            if cell and cell.speedup:
                row_z.append(max(-4.0, min(4.0, math.log2(cell.speedup))))
                runs = f" (median of {cell.runs} runs)" if cell.runs > 1 else ""
                row_text.append(f"{significant(cell.speedup)}{TIMES}{runs}")
                row_links.append(kernel_url(cell.kernel_id))
                row_mz.append(None)
                row_mt.append("")
                row_mh.append("")
            else:
                kind = failures.get(pk, {}).get(llm_id, NOT_ATTEMPTED)
                value, _, symbol, hover = MISSING_CELLS[kind]
                row_z.append(None)
                row_text.append("")
                row_links.append("")
                row_mz.append(value)
                row_mt.append(symbol)
                row_mh.append(hover)
        z.append(row_z)
        text.append(row_text)
        links.append(row_links)
        missing_z.append(row_mz)
        missing_text.append(row_mt)
        missing_hover.append(row_mh)
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
            hoverongaps=False,
            colorbar={"title": "speedup", "tickvals": ticks, "ticktext": [f"{2.0**t:g}{TIMES}" for t in ticks]},
        )
    )
    colours = [v[1] for v in sorted(MISSING_CELLS.values())]
    fig.add_trace(
        go.Heatmap(
            z=missing_z,
            x=x,
            y=y,
            text=missing_text,
            customdata=missing_hover,
            texttemplate="%{text}",
            textfont={"size": 12, "color": "#ffffff"},
            colorscale=[
                [0.0, colours[0]],
                [0.33, colours[0]],
                [0.34, colours[1]],
                [0.66, colours[1]],
                [0.67, colours[2]],
                [1.0, colours[2]],
            ],
            zmin=0,
            zmax=2,
            showscale=False,
            xgap=1,
            ygap=1,
            hovertemplate="%{y}<br>%{x}: %{customdata}<extra></extra>",
            hoverongaps=False,
            name="no speedup",
        )
    )
    fig.update_yaxes(autorange="reversed", tickfont={"size": 12}, automargin=True)
    fig.update_xaxes(side="top", tickfont={"size": 12}, automargin=True)
    fig.update_layout(
        title="Per-problem speedup (click a cell to inspect the kernel)",
        height=max(420, 22 * len(problem_ids) + 180),
        plot_bgcolor="#ffffff",
    )
    return fig


def speed_of_light_figure(
    problems: Mapping[int, tuple[int, int, str]],
    llms: Mapping[int, str],
    cells: Mapping[int, Mapping[int, Cell]],
    kernel_url: Callable[[int], str],
) -> go.Figure:
    """Per LLM, the speed-of-light fractions (roofline bound / kernel time) of its chosen kernels as a box with every
    point (log axis, a dotted line at 1). Above 1 is faster than the bound, which cannot be: those points are drawn
    again as red crosses, "flagged"; a click on a point opens the kernel."""
    series: dict[str, list[tuple[float, str, str]]] = {}
    for llm_id in sorted(llms, key=lambda i: llms[i].lower()):
        points = [
            (cell.sol, f"L{p[0]}/{p[1]} {_short(p[2])}", kernel_url(cell.kernel_id))
            for pk, p in sorted(problems.items(), key=lambda item: item[1][:2])
            if (cell := cells.get(pk, {}).get(llm_id)) and cell.sol
        ]
        if points:
            series[llms[llm_id]] = points
    if not series:
        return empty_figure(
            "Nothing to plot: no GPU evaluations with known device peaks yet (CPU runs and GPUs without datasheet"
            " peaks have no speed-of-light bound)."
        )
    fig = go.Figure()
    flagged: list[tuple[str, float, str, str]] = []
    for name, points in series.items():
        fig.add_trace(
            go.Box(
                x=[name] * len(points),
                y=[f for f, _, _ in points],
                text=[label for _, label, _ in points],
                customdata=[url for _, _, url in points],
                name=name,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                showlegend=False,
                hovertemplate="%{text}<br>%{y:.1%} of the speed of light<extra>" + name + "</extra>",
            )
        )
        flagged += [(name, f, label, url) for f, label, url in points if f > 1]
    if flagged:
        fig.add_trace(
            go.Scatter(
                x=[n for n, _, _, _ in flagged],
                y=[f for _, f, _, _ in flagged],
                text=[label for _, _, label, _ in flagged],
                customdata=[url for _, _, _, url in flagged],
                mode="markers",
                name="flagged: faster than the bound",
                marker={"symbol": "x", "size": 12, "color": "#cf222e"},
                hovertemplate="%{text}<br>%{y:.1%} of the speed of light: faster than the bound<extra>%{x}</extra>",
            )
        )
    fig.add_hline(y=1, line_dash="dot", line_color="#57606a")
    fractions = [f for points in series.values() for f, _, _ in points]
    fig.update_yaxes(title="Roofline bound / kernel time (log)", **log_axis(fractions, pad=0.1, percent=True))
    fig.update_xaxes(tickfont={"size": 12}, automargin=True)
    fig.update_layout(title="Speed of light per LLM", height=420, legend={"orientation": "h"})
    return fig


def level_counters(decomposition: Mapping[int, Mapping[int, Counter]], llm_ids: Sequence[int]) -> dict[str, Counter]:
    """Sum the per-LLM decomposition into 'Level 1'..'Level 3' and 'Overall' counters for the chosen LLMs."""
    out: dict[str, Counter] = {f"Level {level}": Counter() for level in LEVELS}
    for llm_id in llm_ids:
        for level, counter in decomposition.get(llm_id, {}).items():
            out[f"Level {level}"].update(counter)
    out["Overall"] = sum(out.values(), Counter())
    return {k: v for k, v in out.items() if sum(v.values())}
