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


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`evaluate_kernel.apply_async` calls recorded instead of written to the broker (see tests/pipeline)."""
    from evaluator.tasks.audit import audit_kernels_static
    from evaluator.tasks.evaluation import evaluate_kernel
    from tests.pipeline.conftest import SentTasks

    spy = SentTasks()
    monkeypatch.setattr(evaluate_kernel, "apply_async", lambda **kw: spy.calls.append(kw))
    monkeypatch.setattr(audit_kernels_static, "apply_async", lambda *a, **kw: spy.audits.append(kw.get("args", a)))
    return spy


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`evaluator.runner.run_evaluation` answered from a script of records (tests/pipeline's stand-in harness)."""
    import evaluator.runner as runner
    from tests.pipeline.conftest import StandInHarness

    harness = StandInHarness()
    monkeypatch.setattr(runner, "run_evaluation", harness)
    return harness
