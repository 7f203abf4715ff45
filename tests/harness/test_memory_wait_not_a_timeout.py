"""Time an evaluation spends queued for GPU memory behind other evaluations is not the kernel's: the runner's backstop
(runner.py, the harness's own limit plus a grace) stops counting while a memory admission waits, so an honest kernel
that waited longer than its limit is still evaluated, never killed and recorded as a `timeout`. Runs on the CPU with a
memory budget."""

from __future__ import annotations

import threading
import time

from evaluator import runner
from evaluator.harness.gpu_memory import MemoryLedger

MB = 1 << 20


def test_a_memory_wait_longer_than_the_limit_is_not_a_timeout(evaluate, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "GRACE_SECONDS", 2.0)  # the backstop 2 s past the harness's limit
    locks = tmp_path / "locks"
    ledger = MemoryLedger(locks, "cpu")
    hold_s = 40.0  # past the 30 s limit and its grace
    waited = threading.Event()

    def other_evaluation() -> None:
        with ledger.reserve(100 * MB, 100 * MB, time.monotonic() + 5):
            waited.set()
            time.sleep(hold_s)

    thread = threading.Thread(target=other_evaluation)
    thread.start()
    waited.wait(5)
    try:
        record = evaluate(
            "relu", "relu_correct", timeout=30, gpu_lock_dir=str(locks), gpu_memory_budget_mb=100,
            gpu_memory_reserve_mb=50,
        )  # fmt: skip
    finally:
        thread.join()
    assert record["status"] == "ok", record["error"]
    assert record["phases"]["gpu_memory_wait"] > 30.0
    assert "1 other evaluations held 0.1 of 0.1 GiB" in record["environment"]["gpu_hold"]["waited_for"]
