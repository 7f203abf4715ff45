"""Reads for the budget pages: an account's compute budget and that of the LLMs it may upload under."""

from __future__ import annotations

from typing import Any

from evaluator.selectors.budget import WINDOW, budget_for_llm, budget_for_user
from leaderboard.selectors.llms import llm_list_uploadable

LLMS_SHOWN = 50


def budget_overview(*, user: Any) -> dict[str, Any]:
    """{account, llms, window_hours} as plain data (the account page and GET /api/budget/). Staff are exempt and
    see no LLM budgets (they may upload under every LLM)."""
    account = budget_for_user(user=user)
    llms = [] if account.exempt else list(llm_list_uploadable(user=user).order_by("name")[:LLMS_SHOWN])
    return {
        "account": account.as_dict(),
        "llms": [budget_for_llm(llm=llm).as_dict() for llm in llms],
        "window_hours": int(WINDOW.total_seconds() // 3600),
    }
