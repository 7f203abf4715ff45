"""Fixtures of the reproducibility tests (seeds, re-evaluations, the dataset, webhooks)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pipeline.helpers import DEMO_DIR, DEMO_SET


@pytest.fixture
def demo_problems(db: Any) -> None:
    """The project's CPU demo problems (problem set "demo"), imported by the real importer."""
    from leaderboard.services.problems import problems_import_path

    problems_import_path(path=DEMO_DIR / "problems", problem_set=DEMO_SET, demo=True)
