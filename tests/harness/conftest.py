"""Fixtures for the harness tests: tiny KernelBench-format problems and kernels, evaluated on CPU in quick mode."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluator.harness.protocol import get_check
from evaluator.runner import run_evaluation

HERE = Path(__file__).resolve().parent
PROBLEMS = HERE / "problems"
KERNELS = HERE / "kernels"


def source(kind: str, name: str) -> str:
    folder = PROBLEMS if kind == "problem" else KERNELS
    path = folder / name
    return path.read_text() if path.exists() else (folder / f"{name}.py").read_text()


@pytest.fixture
def evaluate(tmp_path: Path):
    """Run the real harness (runner -> orchestrator -> workers) on a test problem and kernel."""

    def run(
        problem: str,
        kernel: str | None = None,
        *,
        kernel_source: str | None = None,
        timeout: float = 120,
        **options: Any,
    ) -> dict[str, Any]:
        return run_evaluation(
            problem_source=source("problem", problem),
            kernel_source=kernel_source if kernel_source is not None else source("kernel", kernel or ""),
            device="cpu",
            timeout=timeout,
            work_root=tmp_path / "work",
            options={"quick": True, **options},
        )

    return run


def check(record: dict[str, Any], name: str) -> dict[str, Any]:
    found = get_check(record, name)
    assert found is not None, name
    return found


def dist(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(d for d in record["distributions"] if d["name"] == name)


@contextlib.contextmanager
def following(follow: Callable[[threading.Event], None]) -> Iterator[None]:
    """Run follow(stop) in another thread for the block (watching the memory ledger while an evaluation runs);
    `stop` is set when the block ends, and the thread is joined."""
    stop = threading.Event()
    thread = threading.Thread(target=follow, args=(stop,))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
