"""Leaderboard, problem and LLM pages, and plotly.js served from the installed package. Thin: parse, read, render."""

from __future__ import annotations

import gzip
import hashlib
from functools import lru_cache

import plotly
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.views.decorators.http import require_GET, require_POST

from catalogue.models import Problem
from evaluator.services.degenerate import problem_degenerate_review
from leaderboard import charts
from leaderboard.board_request import board_request, llm_board_request
from leaderboard.selectors.pages import llm_page, llm_result_views, problem_page
from leaderboard.selectors.ranking import (
    FAST_P,
    LEVELS,
    RANKING_RULE,
    REPEAT_RULE,
    LeaderboardData,
    board_measured_cached,
    cache_key,
    cached,
    leaderboard_data,
    level_tabs,
    llm_level_rows,
    p_label,
    sort_rows,
)

# (sort key, header, explanation, group) in display order; the template renders LLM and baseline rows alike.
COLUMNS = [
    ("name", "LLM / baseline", "", ""),
    ("coverage", "Coverage", "Problems attempted / active problems in the set", ""),
    ("correctness", "Correct %", "Problems with at least one correct sample / problems attempted", ""),
    *(
        (
            f"fast_{p_label(p)}",
            "1 (Fast@1)" if p == 1 else p_label(p),
            f"fast_{p_label(p)}: problems of the whole set whose chosen kernel is correct and faster than"
            f" {p_label(p)}\u00d7 TF32 (not attempted or incorrect: not fast)",
            "fast_p, % of all problems",
        )
        for p in FAST_P
    ),
    (
        "speedup",
        "Correct speedup",
        "Geomean over correct problems only of TF32 baseline time / kernel time (best of k distinct sources)",
        "",
    ),
    ("memory", "Geomean", "Geomean over correct problems of baseline peak memory / kernel peak memory", "Memory"),
    ("mem_efficient", "Efficient %", "Mem efficient %: correct problems whose kernel lowers peak memory", "Memory"),
    ("mem_increased", "Increased %", "Mem increased %: correct problems whose kernel raises peak memory", "Memory"),
    ("kernels", "Kernels", "Evaluated kernels (all samples)", ""),
    ("standard", "Speedup", "Standard protocol: D1 only, atol=rtol=1e-2, FP32 baseline, no audit", "Standard protocol"),
    ("inflation", "Inflation", "Standard speedup / verified speedup", "Standard protocol"),
    (
        "sol",
        "Speed of light",
        "Geomean over correct problems of the roofline bound / kernel time (GPUs with known peaks only)",
        "Hardware",
    ),
    (
        "compile",
        "vs torch.compile",
        "Geomean over correct problems of the stored torch.compile time / kernel time (stored sweep, not paired)",
        "Hardware",
    ),
]


def header_groups(columns: list[tuple[str, str, str, str]]) -> list[tuple[str, int, tuple | None]]:
    """The top header row: (group label, columns spanned, None) per group, or ("", 1, column) for a column
    without a group, which spans both header rows."""
    groups: list[tuple[str, int, tuple | None]] = []
    for column in columns:
        group = column[3]
        if not group:
            groups.append(("", 1, column))
        elif groups and groups[-1][0] == group:
            groups[-1] = (group, groups[-1][1] + 1, None)
        else:
            groups.append((group, 1, None))
    return groups


HEADER_GROUPS = header_groups(COLUMNS)
LEVEL_TABS = [("", "Overall"), *((str(level), f"Level {level}") for level in LEVELS)]


def _kernel_url(kernel_id: int) -> str:
    return reverse("inspector:kernel-detail", args=[kernel_id])


def _charts(
    version: str, data: LeaderboardData, level: int | None, llm_ids: list[int] | None = None, stack: str = ""
) -> dict[str, charts.Fragment]:
    """The chart fragments; rendering a figure costs more than reading the board, so they are cached beside it. A
    chart with nothing to draw here (memory and speed of light on a CPU board) is left out by the page, which says
    why in one line (templates/leaderboard/_charts.html)."""
    llm_ids = llm_ids if llm_ids is not None else list(data.llms)
    levels = [level] if level else list(LEVELS)
    rows_by_level = {lv: [r for r in data.rows.get(lv, []) if r.llm_id in llm_ids] for lv in levels}
    in_level = {pk for pk, p in data.problems.items() if level is None or p[0] == level}
    speedups = {
        data.llms[llm_id]: [cs[llm_id].speedup for pk, cs in data.cells.items() if pk in in_level and llm_id in cs]
        for llm_id in llm_ids
    }
    tag = f"{level}:{','.join(map(str, sorted(llm_ids)))}"
    if stack:  # a board read on one software stack has charts of its own
        tag += ":" + hashlib.sha256(stack.encode()).hexdigest()[:16]
    problems = {pk: p for pk, p in data.problems.items() if pk in in_level}
    llms = {i: data.llms[i] for i in llm_ids}
    out = {
        "scatter": lambda: charts.fragment(
            charts.memory_speedup_figure(rows_by_level), "chart-memory-speedup", "Memory vs speedup, per level"
        ),
        "cdf": lambda: charts.fragment(charts.speedup_cdf_figure(speedups), "chart-speedup-cdf", "Speedup CDF per LLM"),
        "decomposition": lambda: charts.fragment(
            charts.decomposition_figure(charts.level_counters(data.decomposition, llm_ids)),
            "chart-decomposition",
            "What changes the verdict: TF32 baseline vs hidden tests",
        ),
        "sol": lambda: charts.fragment(
            charts.speed_of_light_figure(problems, llms, data.cells, _kernel_url),
            "chart-speed-of-light",
            "Speed of light per LLM",
        ),
        "heatmap": lambda: charts.fragment(
            charts.heatmap_figure(problems, llms, data.cells, _kernel_url, data.failures),
            "chart-heatmap",
            "Per-problem speedup",
        ),
    }
    return {
        name: cached(cache_key(version, "chart-card", data.hardware, data.problem_set, name, tag), build)
        for name, build in out.items()
    }


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    """The leaderboard: one row per LLM for the chosen level, baselines beside them, then the charts."""
    board = board_request(request.GET)
    version, hardware, problem_set, level = board.version, board.hardware, board.problem_set, board.level
    sort_key, descending = board.sort_key, board.descending
    data = leaderboard_data(hardware=hardware, problem_set=problem_set, version=version, stack=board.stack)
    rows = sort_rows(data.rows.get(level, []), f"{'-' if descending else ''}{sort_key}")
    return render(
        request,
        "leaderboard/index.html",
        {
            "rows": rows,
            "columns": COLUMNS,
            "header_groups": HEADER_GROUPS,
            "sort_key": sort_key,
            "descending": descending,
            "level": level,
            "level_param": str(level or ""),
            "level_tabs": level_tabs(data),
            "hardware": hardware,
            "problem_set": problem_set,
            "choices": board.choices,
            "data": data,
            "ranking_rule": RANKING_RULE,
            "repeat_rule": REPEAT_RULE,
            "synthetic": hardware.startswith("synthetic"),
            "charts": _charts(version, data, level, stack=board.stack) if data.llms else {},
            "stack": board.stack,
            "measured": board_measured_cached(
                hardware=hardware, problem_set=problem_set, stack=board.stack, version=version
            ),
        },
    )


@require_GET
def problem_detail(request: HttpRequest, pk: int) -> HttpResponse:
    page = problem_page(pk=pk, hardware=request.GET.get("hardware") or None)
    return render(request, "leaderboard/problem_detail.html", {"page": page, "problem": page.problem})


@require_POST
def problem_degenerate(request: HttpRequest, pk: int) -> HttpResponse:
    """Staff only: confirm or clear a problem's degenerate status, with a note."""
    if not (request.user.is_authenticated and request.user.is_staff):
        raise PermissionDenied("staff only")
    problem = get_object_or_404(Problem, pk=pk)
    action = request.POST.get("action", "")
    try:
        problem = problem_degenerate_review(
            problem=problem, action=action, user=request.user, note=request.POST.get("note", "")
        )
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{problem.key} is now: {problem.get_degenerate_display()}.")
    return redirect(problem.get_absolute_url())


@require_GET
def llm_detail(request: HttpRequest, pk: int) -> HttpResponse:
    board = llm_board_request(request.GET, views=llm_result_views(pk=pk))
    version, hardware, problem_set, level = board.version, board.hardware, board.problem_set, board.level
    page = llm_page(pk=pk, hardware=hardware, problem_set=problem_set, level=level, page=request.GET.get("page", 1))
    data = leaderboard_data(hardware=hardware, problem_set=problem_set, version=version)
    return render(
        request,
        "leaderboard/llm_detail.html",
        {
            "page": page,
            "llm": page.llm,
            "rows": llm_level_rows(data, page.llm.pk),
            "columns": COLUMNS,
            "header_groups": HEADER_GROUPS,
            "hardware": hardware,
            "problem_set": problem_set,
            "level": level,
            "level_param": str(level or ""),
            "level_tabs": level_tabs(data),
            "choices": board.choices,
            "charts": _charts(version, data, level, [page.llm.pk]) if page.llm.pk in data.llms else {},
        },
    )


@lru_cache(maxsize=1)
def _plotly_js() -> tuple[bytes, bytes]:
    from plotly.offline import get_plotlyjs

    raw = get_plotlyjs().encode()
    return raw, gzip.compress(raw, compresslevel=6)


@require_GET
def plotly_js(request: HttpRequest) -> HttpResponse:
    """plotly.min.js from the installed plotly package (no CDN, nothing committed), gzipped when the client can."""
    raw, gz = _plotly_js()
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        response = HttpResponse(gz, content_type="application/javascript")
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(raw, content_type="application/javascript")
    patch_vary_headers(response, ["Accept-Encoding"])
    # The URL carries the plotly version, so the file can be cached for a year.
    patch_cache_control(response, public=True, max_age=365 * 24 * 3600, immutable=True)
    return response


PLOTLY_VERSION = plotly.__version__
