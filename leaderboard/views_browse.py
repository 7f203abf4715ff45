"""Index pages of problems and LLMs, and two LLMs compared problem by problem. Thin: parse, read, render."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from catalogue.models import LLM
from leaderboard.board_request import board_request
from leaderboard.selectors.pages import (
    board_llm_ids,
    compare_page,
    compare_preselect,
    llm_boards,
    llm_index,
    llm_organisations,
    problem_index,
    problem_index_choices,
)
from leaderboard.untrusted import strict_int


def _int(value: str | None) -> int | None:
    return strict_int(value)  # ASCII digits only: "²".isdigit() is true, yet int("²") fails


def _text(value: str | None, limit: int = 100) -> str:
    return (value or "").strip()[:limit]


@require_GET
def problem_list(request: HttpRequest) -> HttpResponse:
    """/problems/?q=&level=&problem_set=&status=active|inactive"""
    filters: dict[str, Any] = {
        "q": _text(request.GET.get("q")),
        "level": _int(request.GET.get("level")),
        "problem_set": _text(request.GET.get("problem_set")),
        "status": _text(request.GET.get("status"), 10),
    }
    page = problem_index(**filters, page=request.GET.get("page", 1))
    context = {"page": page, "filters": filters, **problem_index_choices()}
    return render(request, "leaderboard/problem_index.html", context)


@require_GET
def llm_list(request: HttpRequest) -> HttpResponse:
    """/llms/?q=&organisation="""
    filters = {"q": _text(request.GET.get("q")), "organisation": _text(request.GET.get("organisation"), 200)}
    page = llm_index(**filters, page=request.GET.get("page", 1))
    boards = llm_boards(llm_ids=[llm.pk for llm in page])
    context = {"page": page, "filters": filters, "organisations": llm_organisations(), "boards": boards}
    return render(request, "leaderboard/llm_index.html", context)


@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    """/compare/?a=<llm id>&b=<llm id>&hardware=&problem_set=: verdicts and speedups side by side. A side the
    query does not name opens on the board's best-ranked LLM (the board's top two without either)."""
    board = board_request(request.GET)
    choices, hardware, problem_set = board.choices, board.hardware, board.problem_set
    ranked = board_llm_ids(hardware=hardware, problem_set=problem_set, version=board.version)
    open_sides = {side for side in ("a", "b") if side not in request.GET}
    a_pk, b_pk = compare_preselect(
        ranked=ranked, a=_int(request.GET.get("a")), b=_int(request.GET.get("b")), open_sides=open_sides
    )
    page = compare_page(a_pk=a_pk, b_pk=b_pk, hardware=hardware, problem_set=problem_set)
    context = {
        "preselected": bool(open_sides) and bool(page.a or page.b),
        "board_llms": len(ranked),
        "page": page,
        "llms": LLM.objects.order_by("name").only("pk", "name"),
        "hardware": hardware,
        "problem_set": problem_set,
        "choices": choices,
    }
    return render(request, "leaderboard/compare.html", context)
