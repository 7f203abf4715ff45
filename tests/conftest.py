"""Project-wide test fixtures. Area-specific fixtures live in tests/<area>/conftest.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests run with DEBUG off, like production; settings require a SECRET_KEY then.
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.getenv("SHARED_DIR", REPO_ROOT.parent / "shared"))
SHIPPED_JSONL = REPO_ROOT / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"
# The shared copy beside the checkout when there is one (what the issue names), else the identical shipped copy.
PROBLEMS_JSONL = SHARED_DIR / "datasets" / "kernelbench" / "problems.jsonl"
if not PROBLEMS_JSONL.exists():
    PROBLEMS_JSONL = SHIPPED_JSONL


@pytest.fixture
def problems_jsonl() -> Path:
    if not PROBLEMS_JSONL.exists():
        pytest.skip(f"KernelBench dataset not found at {PROBLEMS_JSONL}")
    return PROBLEMS_JSONL
