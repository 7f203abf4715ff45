"""No process starts while an evaluation holds the GPU exclusively: a later process pair (timing_phase) starts with
the exclusive hold given back, and the hold is taken again, queueing like any timer, before its timed blocks. The
record's phases say what the exclusive hold was spent on (exclusive_s = exclusive_timing_s + exclusive_other_s) and
count the pair starts under it (pair_starts_under_exclusive_lock: 0).

Runs on CPU: the lock is flock on files, taken on CPU too when gpu_lock_dir is set."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from evaluator.harness.gpu_lock import DeviceLock, LockTimeout
from evaluator.harness.orchestrator.evaluation import EvaluationRun
from evaluator.harness.protocol import Spec


def _taken_elsewhere(locks: Path, key: str = "cpu", wait: float = 0.2) -> bool:
    """Is the GPU (CPU stand-in) held exclusively by someone else right now?"""
    try:
        with DeviceLock(locks, key).exclusive(time.monotonic() + wait):
            return False
    except LockTimeout:
        return True


def test_released_gives_the_exclusive_lock_back_and_takes_it_again(tmp_path):
    lock = DeviceLock(tmp_path, "GPU-x")
    with lock.exclusive(time.monotonic() + 5):
        assert _taken_elsewhere(tmp_path, "GPU-x")
        with lock.released(time.monotonic() + 5):
            assert not _taken_elsewhere(tmp_path, "GPU-x")  # another evaluation may time meanwhile
        assert _taken_elsewhere(tmp_path, "GPU-x")
    assert not _taken_elsewhere(tmp_path, "GPU-x")
    with pytest.raises(RuntimeError):
        with lock.released(time.monotonic() + 1):
            pass


def _evaluation(tmp_path: Path) -> EvaluationRun:
    spec = Spec(
        problem_path="", kernel_path="", device="cpu", work_dir=str(tmp_path / "work"),
        options={"gpu_lock_dir": str(tmp_path / "locks")},
    )  # fmt: skip
    evaluation = EvaluationRun(spec, lambda event: None)
    evaluation.ctx.footprint = 1  # a small evaluation: shares the GPU for correctness
    return evaluation


def test_a_pair_start_runs_with_the_exclusive_hold_given_back_and_the_phases_say_so(tmp_path):
    evaluation = _evaluation(tmp_path)
    locks = tmp_path / "locks"
    deadline_before = evaluation.ctx.deadline.at
    began = time.monotonic()
    with evaluation._gpu("exclusive"):
        assert evaluation.lock_state == "exclusive" and _taken_elsewhere(locks)
        out = time.monotonic()
        with evaluation._outside_lock() as hold:
            assert hold == "released" and evaluation.lock_state == "released"
            # another timer takes the GPU while this pair starts; this evaluation queues for it afterwards
            got = threading.Event()

            def other_timer() -> None:
                with DeviceLock(locks, "cpu").exclusive(time.monotonic() + 5):
                    got.set()
                    time.sleep(0.5)

            thread = threading.Thread(target=other_timer)
            thread.start()
            assert got.wait(5)
            time.sleep(0.3)  # "starting a process pair"
        outside = time.monotonic() - out  # the start, and the wait to take the GPU back
        thread.join()
        assert evaluation.lock_state == "exclusive" and _taken_elsewhere(locks)
        evaluation.ctx.record["phases"]["timing_loop"] = 0.1  # what the timed blocks would have recorded
        time.sleep(0.2)
    held_at_most = time.monotonic() - began - outside
    assert evaluation.lock_state == "none" and not _taken_elsewhere(locks)
    phases = evaluation.ctx.record["phases"]
    assert phases["pair_starts_under_exclusive_lock"] == 0
    assert phases["gpu_wait"] >= 0.1  # queued behind the other timer to take the GPU back
    assert evaluation.ctx.deadline.at > deadline_before  # and the wait is not the kernel's time
    # the start (0.3 s) and the wait for the other timer (0.5 s) are not in the hold
    assert outside >= 0.5 and 0.2 <= phases["exclusive_s"] <= held_at_most + 0.01
    assert phases["exclusive_timing_s"] == 0.1
    assert phases["exclusive_other_s"] == pytest.approx(phases["exclusive_s"] - 0.1, abs=0.002)


def test_outside_any_exclusive_hold_the_start_reports_what_it_ran_under(tmp_path):
    evaluation = _evaluation(tmp_path)
    with evaluation._outside_lock() as hold:
        assert hold == "none"
    with evaluation._gpu("shared"), evaluation._outside_lock() as hold:
        assert hold == "shared"


def test_an_evaluation_with_several_pairs_starts_none_under_the_exclusive_lock(evaluate, tmp_path):
    """The real harness on CPU with the lock on and three process pairs."""
    record = evaluate(
        "linear_bn",
        "linear_bn_correct",
        process_pairs=3,
        max_process_pairs=3,
        launch_bound_pairs=3,
        pairs_below_ms=1000.0,
        gpu_lock_dir=str(tmp_path / "locks"),
    )
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    phases, timing = record["phases"], record["timing"]
    assert len(timing["pairs"]) == 3
    starts = timing["pair_starts"]
    assert [s["pair"] for s in starts] == [2, 3]
    assert all(s["gpu_hold"] == "released" for s in starts), starts
    assert phases["pair_starts_under_exclusive_lock"] == 0
    loops = sum(v for k, v in phases.items() if k.startswith("timing_loop"))
    assert phases["exclusive_timing_s"] == pytest.approx(loops, abs=0.002)
    assert phases["exclusive_timing_s"] + phases["exclusive_other_s"] == pytest.approx(phases["exclusive_s"], abs=0.002)
    # the pair starts lie outside the exclusive hold: both fit in the evaluation's time without overlapping
    assert phases["exclusive_s"] + sum(s["seconds"] for s in starts) <= phases["total"]
    assert phases["exclusive_s"] < phases["timing"] - sum(s["seconds"] for s in starts) + phases["total"] * 0.2
