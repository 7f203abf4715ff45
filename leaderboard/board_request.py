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
    )
