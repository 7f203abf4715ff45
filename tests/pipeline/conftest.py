"""Fixtures of the pipeline tests: demo problems, users and tokens, a spy on enqueued tasks, and a stand-in harness
for the cases the real one cannot produce on demand (infrastructure errors, crafted records)."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from rest_framework.test import APIClient

from evaluator.harness import seeds
from tests.pipeline.helpers import DEMO_DIR, DEMO_SET


@pytest.fixture
def demo_problems(db: Any) -> None:
    """The project's CPU demo problems (problem set "demo"), imported by the real importer."""
    from leaderboard.services.problems import problems_import_path

    problems_import_path(path=DEMO_DIR / "problems", problem_set=DEMO_SET, demo=True)


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def staff(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="root", password="pw-root-123", is_staff=True)


@pytest.fixture
def api(user: Any) -> APIClient:
    """An API client authenticated by token, as the CLI client is."""
    client = APIClient()
    from leaderboard.services.tokens import api_token_create

    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user)}")
    return client


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture(autouse=True)
def _fresh_throttle_cache() -> None:
    from django.core.cache import cache, caches

    cache.clear()
    caches["throttle"].clear()  # local memory in tests (tests/settings.py)


@dataclass
class SentTasks:
    calls: list[dict[str, Any]] = field(default_factory=list)
    audits: list[Any] = field(default_factory=list)  # static-audit messages (kernel id lists)

    @property
    def ids(self) -> list[int]:
        return [c["args"][0] for c in self.calls]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> SentTasks:
    """Records `evaluate_kernel.apply_async` calls instead of writing to the broker (unit tests only)."""
    from evaluator.tasks.audit import audit_kernels_static
    from evaluator.tasks.evaluation import evaluate_kernel

    spy = SentTasks()
    monkeypatch.setattr(evaluate_kernel, "apply_async", lambda **kw: spy.calls.append(kw))
    monkeypatch.setattr(audit_kernels_static, "apply_async", lambda *a, **kw: spy.audits.append(kw.get("args", a)))
    return spy


class FakeInfraError(Exception):
    """Stands in for evaluator.runner.InfraError while the real runner module does not exist."""


@dataclass
class StandInHarness:
    """Answers run_evaluation calls from a script of records or exceptions; remembers every call."""

    script: list[Any] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    default: Callable[[], Any] | None = None

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        step = self.script.pop(0) if self.script else (self.default() if self.default else None)
        if isinstance(step, BaseException):
            raise step
        master = (kwargs.get("options") or {}).get("seeds")
        if master and isinstance(step, dict) and isinstance(step.get("environment"), dict):
            # As the harness does: the record commits to the master seed it was handed (evaluator/harness/seeds.py).
            step["environment"].setdefault("seeds_digest", seeds.digest(master))
        return step


@pytest.fixture
def runner_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """`evaluator.runner`: the real one when it exists, else a placeholder module with the contract's names."""
    try:
        import evaluator.runner as runner
    except ImportError:
        runner = types.ModuleType("evaluator.runner")
        runner.InfraError = FakeInfraError  # type: ignore[attr-defined]
        runner.run_evaluation = lambda **kw: (_ for _ in ()).throw(RuntimeError("no harness"))  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "evaluator.runner", runner)
        import evaluator

        monkeypatch.setattr(evaluator, "runner", runner, raising=False)
    return runner


@pytest.fixture
def stand_in(runner_module: types.ModuleType, monkeypatch: pytest.MonkeyPatch) -> StandInHarness:
    harness = StandInHarness()
    monkeypatch.setattr(runner_module, "run_evaluation", harness)
    return harness


@pytest.fixture
def bob(django_user_model: Any) -> Any:
    """A second account, for what one account may do to another's LLMs and budget."""
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")
