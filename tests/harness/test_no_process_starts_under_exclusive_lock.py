"""The exclusive GPU hold holds only timed loops: each process pair's set-up, its kept outputs' re-checks, the
fresh-input probe and the profiled calls run under the shared hold, and a later process pair starts holding nothing
(orchestrator/gpu_holds.py, timing_phase.py). The record's phases say what the exclusive hold was spent on
(exclusive_s = exclusive_timing_s + exclusive_other_s) and count the pair starts under it
(pair_starts_under_exclusive_lock: 0).

Runs on CPU: the lock is flock on files, taken on CPU too when gpu_lock_dir is set."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evaluator.harness.commands import Command
from evaluator.harness.gpu_lock import DeviceLock, LockTimeout
from evaluator.harness.orchestrator.evaluation import EvaluationRun
from evaluator.harness.protocol import Spec


def _taken_elsewhere(locks: Path, key: str = "cpu", mode: str = "exclusive", wait: float = 0.2) -> bool:
    """Is the GPU (CPU stand-in) held by someone else right now, so that `mode` cannot be taken?"""
    lock = DeviceLock(locks, key)
    try:
        with (lock.exclusive if mode == "exclusive" else lock.shared)(time.monotonic() + wait):
            return False
    except LockTimeout:
        return True


def _evaluation(tmp_path: Path, **options: Any) -> EvaluationRun:
    spec = Spec(
        problem_path="", kernel_path="", device="cpu", work_dir=str(tmp_path / "work"),
        options={"gpu_lock_dir": str(tmp_path / "locks"), **options},
    )  # fmt: skip
    return EvaluationRun(spec, lambda event: None)


def test_a_hold_inside_another_gives_it_back_for_the_block_and_takes_it_again(tmp_path):
    evaluation = _evaluation(tmp_path)
    locks = tmp_path / "locks"
    deadline_before = evaluation.ctx.deadline.at
    holds = evaluation.gpu
    with holds.hold("exclusive"):
        assert holds.mode == "exclusive" and _taken_elsewhere(locks, mode="shared")
        with holds.hold("shared"):  # a re-check in a pause of the timed loops: others may run, nobody times
            assert holds.mode == "shared"
            with holds.command(Command.RUN):  # the device is taken shared for each worker command
                assert not _taken_elsewhere(locks, mode="shared") and _taken_elsewhere(locks, mode="exclusive")
            # between commands nothing is held: a queued timer waits for one command, not a whole phase
            assert not _taken_elsewhere(locks, mode="exclusive")
        assert holds.mode == "exclusive" and _taken_elsewhere(locks, mode="shared")
        with holds.command(Command.RUN):  # under the exclusive hold a command takes nothing more
            assert holds.mode == "exclusive"
        with holds.hold("none") as held:  # a process pair's start: nothing held, another timer takes the GPU
            assert held == "none"
            got = threading.Event()

            def other_timer() -> None:
                with DeviceLock(locks, "cpu").exclusive(time.monotonic() + 5):
                    got.set()
                    time.sleep(0.5)

            thread = threading.Thread(target=other_timer)
            thread.start()
            assert got.wait(5)
        thread.join()
        assert holds.mode == "exclusive" and _taken_elsewhere(locks)
    assert holds.mode == "none" and not _taken_elsewhere(locks)
    holds.account()
    phases = evaluation.ctx.record.phases
    assert phases["gpu_wait"] > 0  # queued behind the other timer to take the GPU back
    assert evaluation.ctx.deadline.at > deadline_before  # and the wait is not the kernel's time
    assert phases["exclusive_timing_s"] == 0 and phases["exclusive_other_s"] == phases["exclusive_s"]


def test_a_block_that_raises_gives_everything_back(tmp_path):
    evaluation = _evaluation(tmp_path)
    with pytest.raises(RuntimeError), evaluation.gpu.hold("exclusive"), evaluation.gpu.hold("shared"):
        raise RuntimeError("the kernel crashed")
    assert evaluation.gpu.mode == "none" and not _taken_elsewhere(tmp_path / "locks")


@pytest.mark.slow
def test_only_timed_loops_run_under_the_exclusive_hold(evaluate, tmp_path):
    """Every worker command of a CPU evaluation with three process pairs and the lock on, counted by the hold it ran
    under (environment.gpu_hold.commands): under the exclusive hold only timed blocks and the hand-over of a kept
    block's outputs; set-up, re-checks and the fresh-input probe under the shared hold; pair starts under none."""
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
    commands = record["environment"]["gpu_hold"]["commands"]
    phases, timing = record["phases"], record["timing"]
    # A fresh-input round that looks like replay is confirmed by a second round run alone (timed_outputs.fresh_probe):
    # on a loaded 2-core machine an honest kernel's first round can look so, and the second's commands then run under
    # the exclusive hold by design.
    confirming = timing["candidate_fresh_inputs"]["rounds"] == 2
    probe = {Command.FRESH_SETS, Command.TIME_FRESH, Command.RECHECK, Command.RELEASE}
    allowed = {Command.TIME_BLOCK, Command.SAVE_KEPT} | (probe if confirming else set())
    exclusive = set(commands.get("exclusive", {}))
    assert exclusive <= {c.value for c in allowed}, commands
    assert Command.TIME_BLOCK.value in exclusive
    for shared_only in (Command.TIMING_SETUP, Command.RECHECK, Command.FRESH_SETS, Command.TIME_FRESH):
        assert shared_only.value in commands["shared"], (shared_only, commands)
        assert shared_only.value not in commands.get("none", {}), commands
        assert shared_only in allowed or shared_only.value not in commands.get("exclusive", {}), commands
    assert [s["gpu_hold"] for s in timing["pair_starts"]] == ["none", "none"]
    assert phases["pair_starts_under_exclusive_lock"] == 0
    for name in ("timing_setup", "timing_loop", "timing_recheck", "timing_checks", "timing_setup_pair_2"):
        assert name in phases, name
    loops = sum(v for k, v in phases.items() if k.startswith("timing_loop"))
    assert phases["exclusive_timing_s"] == pytest.approx(loops, abs=0.002)
    assert phases["exclusive_timing_s"] + phases["exclusive_other_s"] == pytest.approx(phases["exclusive_s"], abs=0.002)
