"""Project-wide test fixtures. Area-specific fixtures live in tests/<area>/conftest.py."""

from __future__ import annotations

import os
import shutil
import tempfile
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


def processes_in(folder: Path) -> list[int]:
    """Processes whose working directory is inside `folder` (an evaluation's harness and its workers), not counting
    bubblewrap's own processes around the kernel (the sandbox: evaluator/harness/sandbox/namespaces.py)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(str(folder)):
                    with open(f"/proc/{entry}/comm") as fh:
                        if fh.read().strip() != "bwrap":
                            found.append(int(entry))
            except OSError:
                continue
    return found


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) processes on this host whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().split(")")[1].split()[0]
                if state not in {"Z", "X"}:
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


_OWN_BASETEMP = pytest.StashKey[str]()

# Fixtures that start the real harness (runner -> orchestrator -> worker processes, seconds to minutes each): every
# test using one is `slow`, so `pytest -m "not slow"` (make test-fast) stays a quick inner loop. Tests that start it
# some other way (run_evaluation, the CLI, a real worker stack) carry the mark where they are defined.
REAL_HARNESS_FIXTURES = frozenset({"evaluate", "redteam_results"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if REAL_HARNESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """As root, the harness runs kernels as an unprivileged user (harness/sandbox/privileges.py) that must reach the
    tests' temporary dirs. pytest resets /tmp/pytest-of-root to 0700 whenever any session starts, which would cut that
    user off in the middle of a concurrent session's evaluations: a root session gets a base dir of its own."""
    if os.geteuid() == 0 and not config.option.basetemp:
        config.option.basetemp = config.stash[_OWN_BASETEMP] = tempfile.mkdtemp(prefix="pytest-kbv-")


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_BASETEMP, None)
    if own:
        shutil.rmtree(own, ignore_errors=True)


@pytest.fixture
def problems_jsonl() -> Path:
    if not PROBLEMS_JSONL.exists():
        pytest.skip(f"KernelBench dataset not found at {PROBLEMS_JSONL}")
    return PROBLEMS_JSONL
