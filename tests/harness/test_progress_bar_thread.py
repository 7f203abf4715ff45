"""A kernel is judged only by the threads its own code starts, not by a library's progress-bar monitor.

On an H100 (2026-12-05, benchmarks/first_build_gpu.py) an honest torch.compile kernel was rejected by thread_count:
"Python threads started by the kernel (at the end): tqdm_monitor". Inductor draws tqdm bars while it compiles on
CUDA, and tqdm's first bar starts a monitor thread that lives on. Here a kernel draws such a bar on the CPU."""

from __future__ import annotations

import pytest

from .conftest import check, source

pytest.importorskip("tqdm")  # requirements-dev.txt installs it; torch does not need it


def test_a_kernel_that_draws_a_progress_bar_is_not_rejected_for_its_monitor_thread(evaluate) -> None:
    record = evaluate("relu", "progress_bar")
    assert record["status"] == "ok", record.get("error")
    assert record["correct"] is True
    assert check(record, "thread_count")["passed"] is True


def test_a_kernel_that_turns_the_monitor_back_on_starts_that_thread_itself(evaluate) -> None:
    monitor_on = "import tqdm.std\ntqdm.std.tqdm.monitor_interval = 10\n"
    record = evaluate("relu", kernel_source=monitor_on + source("kernel", "progress_bar"))
    assert record["status"] == "rejected"
    assert "tqdm_monitor" in check(record, "thread_count")["detail"]
