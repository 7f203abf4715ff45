"""What a board request asks for: ?hardware=&problem_set=&level=&sort= read once, with the defaults the board
opens on, for the leaderboard, LLM and compare pages and the JSON/CSV API alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from leaderboard.selectors.ranking import (
    DEFAULT_SORT,
    LEVELS,
    BoardChoices,
    board_choices,
    board_version,
    parse_sort,
)
from leaderboard.untrusted import label as label_param
from leaderboard.untrusted import short_text


@dataclass(frozen=True)
class BoardRequest:
    version: str  # board_version(): pass it on to every cached read of this request
    choices: BoardChoices
    hardware: str
    problem_set: str
    level: int | None
    sort: str  # as asked (the API echoes it); sort_key and descending are what it means
    sort_key: str
    descending: bool
    stack: str = ""  # ?stack=: only verdicts measured on this software stack (evaluator.selectors.stacks)


def board_request(query: Mapping[str, str]) -> BoardRequest:
    """Malformed values (control characters, non-labels, unknown levels or sort keys) mean the default, never a
    header or cache key built from them. Without ?problem_set= a board opens on a set its hardware has results
    for. Costs the board-version query and the (cached) choices."""
    version = board_version()
    choices = board_choices(version=version)
    level = query.get("level") or ""
    sort = query.get("sort") or DEFAULT_SORT
    sort_key, descending = parse_sort(sort)
    hardware = label_param(query.get("hardware")) or choices.default_hardware
    return BoardRequest(
        version=version,
        choices=choices,
        hardware=hardware,
        problem_set=short_text(query.get("problem_set")) or choices.default_set_for(hardware),
        level=int(level) if level in {str(lv) for lv in LEVELS} else None,
        sort=sort,
        sort_key=sort_key,
        descending=descending,
        stack=short_text(query.get("stack")) or "",
    )


def llm_board_request(query: Mapping[str, str], *, views: list[tuple[str, str, int]]) -> BoardRequest:
    """An LLM page's request: what the query names, else a (hardware, problem set) that LLM has kernels on.

    `views` are the LLM's (hardware, problem set, kernel count), as llm_result_views() gives them. The board's own
    default comes first when the LLM has kernels there, then the LLM's views on the default hardware, then its
    largest view: an LLM with only H200 results opens on them, never on an empty CPU board.
    """
    board = board_request(query)
    if not views:
        return board
    asked_hw, asked_set = label_param(query.get("hardware")), short_text(query.get("problem_set"))
    fitting = [v for v in views if (not asked_hw or v[0] == asked_hw) and (not asked_set or v[1] == asked_set)]
    if not fitting or any(v[:2] == (board.hardware, board.problem_set) for v in fitting):
        return board
    default_hw = board.choices.default_hardware
    hardware, problem_set, _ = max(fitting, key=lambda v: (v[0] == default_hw, v[2], v[0], v[1]))
    return board_request({**query, "hardware": hardware, "problem_set": problem_set})
