"""Index pages of problems and LLMs, and two LLMs compared problem by problem. Thin: parse, read, render."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from catalogue.models import LLM
from leaderboard.board_request import board_request
from leaderboard.selectors.pages import (
    compare_page,
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
    context = {"page": page, "filters": filters, "organisations": llm_organisations()}
    return render(request, "leaderboard/llm_index.html", context)


@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    """/compare/?a=<llm id>&b=<llm id>&hardware=&problem_set=: verdicts and speedups side by side."""
    board = board_request(request.GET)
    choices, hardware, problem_set = board.choices, board.hardware, board.problem_set
    page = compare_page(
        a_pk=_int(request.GET.get("a")), b_pk=_int(request.GET.get("b")), hardware=hardware, problem_set=problem_set
    )
    context = {
        "page": page,
        "llms": LLM.objects.order_by("name").only("pk", "name"),
        "hardware": hardware,
        "problem_set": problem_set,
        "choices": choices,
    }
    return render(request, "leaderboard/compare.html", context)
