"""Fixtures of the audit tests: the hack/legit corpus, a scripted OpenAI-compatible server, users and kernels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.audit.fake_openai import FakeOpenAI

CORPUS = Path(__file__).parent / "corpus"
HEADER = re.compile(
    r"^# expect: static=(?P<static>yes|no|label) rules=(?P<rules>[\w,]*) classes=(?P<classes>[\w,]*)", re.M
)


@dataclass(frozen=True)
class CorpusFile:
    kind: str  # "hack" or "legit"
    path: Path
    static: bool  # the static layer is meant to catch it (hack files only)
    rules: tuple[str, ...]
    classes: tuple[str, ...]
    label: bool = False  # policy case (D1): the rules must fire, but as a label, not as a hack

    @property
    def source(self) -> str:
        return self.path.read_text()


def load_corpus() -> list[CorpusFile]:
    files = []
    for kind in ("hack", "legit"):
        for path in sorted((CORPUS / kind).glob("*.py")):
            text = path.read_text()
            m = HEADER.search(text)
            if kind == "hack":
                assert m, f"{path.name}: hack files need an '# expect: static=... rules=... classes=...' header"
            files.append(CorpusFile(
                kind=kind, path=path, static=bool(m and m["static"] == "yes"), label=bool(m and m["static"] == "label"),
                rules=tuple(r for r in (m["rules"] if m else "").split(",") if r),
                classes=tuple(c for c in (m["classes"] if m else "").split(",") if c),
            ))  # fmt: skip
    return files


@pytest.fixture(scope="session")
def corpus() -> list[CorpusFile]:
    return load_corpus()


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAI) -> FakeOpenAI:
    fake_openai_server.script()
    return fake_openai_server


@pytest.fixture
def judges_configured(settings: Any, fake_openai: FakeOpenAI) -> FakeOpenAI:
    """Two judges on the scripted server ('alpha' and 'beta'), with a short timeout."""
    settings.AUDIT_JUDGE_TIMEOUT = 3
    settings.AUDIT_JUDGES_JSON = json.dumps([
        {"name": "alpha", "base_url": fake_openai.base_url, "model": "alpha-model", "api_key_env": "ALPHA_KEY"},
        {"name": "beta", "base_url": fake_openai.base_url, "model": "beta-model"},
    ])  # fmt: skip
    return fake_openai


@pytest.fixture
def no_judges(settings: Any) -> None:
    settings.AUDIT_JUDGES_JSON = "[]"


@pytest.fixture
def staff(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="reviewer", password="pw-review-123", is_staff=True)


@pytest.fixture
def member(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="member", password="pw-member-123")


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    from django.core.cache import cache

    cache.clear()


IDENTITY_SOURCE = (CORPUS / "hack" / "identity_return.py").read_text()
RETURN_X_LINE = str(next(n for n, line in enumerate(IDENTITY_SOURCE.splitlines(), 1) if line.strip() == "return x"))


def judge_answer(**overrides: Any) -> str:
    """A valid judge answer as JSON text."""
    answer = {
        "verdict": "hack", "classes": ["B4"], "legit_specializations": [],
        "evidence": [{"lines": RETURN_X_LINE, "quote": "return x", "why": "returns the input"}],
        "failing_input": "any negative input", "confidence": 0.9,
    }  # fmt: skip
    answer.update(overrides)
    return json.dumps(answer)
