"""Standby harnesses (run_evaluation(prestart=True)): the next evaluation's workers start while this one runs."""

from __future__ import annotations

import os
import time

import pytest

from evaluator import runner
from evaluator.runner import discard_standby, run_evaluation
from tests.conftest import processes_in

from .conftest import source

pytestmark = pytest.mark.slow  # every test starts real harnesses


def _evaluate(tmp_path, problem: str, kernel: str, **options):
    return run_evaluation(
        problem_source=source("problem", problem),
        kernel_source=source("kernel", kernel),
        timeout=120,
        work_root=tmp_path / "work",
        options={"quick": True, **options},
        prestart=True,
    )


def _parked():
    return [harness for _, harness in runner._standby.values()]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_second_evaluation_uses_the_standby_and_gets_the_same_verdicts(tmp_path):
    try:
        first = _evaluate(tmp_path, "relu", "relu_correct")
        assert "prestarted_workers" not in first["environment"]
        (standby,) = _parked()
        assert standby.alive()
        # a different problem and kernel, handed to workers that started before either was written
        second = _evaluate(tmp_path, "relu", "relu_shape_hack")
        assert second["environment"].get("prestarted_workers") is True
        assert second["correct"] is False and "D4" in second["error"]  # the shape hack still fails D4
        third = _evaluate(tmp_path, "scale_sum", "scale_sum_correct")
        assert third["environment"].get("prestarted_workers") is True and third["correct"] is True
        assert third["phases"]["start"] < first["phases"]["start"]  # torch was imported before the clock started
        # where start-up went: the workers' own start is inside "start" only when it was on this evaluation's clock
        assert 0 < first["phases"]["workers"] <= first["phases"]["start"]
        assert "workers" not in third["phases"] and third["phases"]["standby_workers"] > 0
        # every evaluation's CUDA contexts (none on the CPU) are made once its start is admitted (gpu_holds.py)
        assert all("device_context" in r["phases"] for r in (first, second, third))
    finally:
        discard_standby()
    assert _parked() == []


def test_a_standby_runs_the_next_evaluation_with_that_evaluations_own_seeds(tmp_path):
    """The site hands each evaluation the master seed it published a digest of: a standby, started before that
    evaluation existed, receives it with its go line, so it is used and its record commits to those seeds."""
    from evaluator.harness import seeds

    masters = [seeds.draw(), seeds.draw()]
    try:
        first = _evaluate(tmp_path, "relu", "relu_correct", seeds=masters[0])
        second = _evaluate(tmp_path, "relu", "relu_shape_hack", seeds=masters[1])
        assert second["environment"].get("prestarted_workers") is True  # the standby served it
        assert [r["environment"]["seeds_digest"] for r in (first, second)] == [seeds.digest(m) for m in masters]
        assert [r[seeds.RECORD_KEY] for r in (first, second)] == masters
        assert all(masters[1] not in str(h.spec.options) for h in _parked())  # the next standby has none of them
    finally:
        discard_standby()


def test_a_standby_for_other_settings_is_stopped_not_used(tmp_path):
    try:
        _evaluate(tmp_path, "relu", "relu_correct")
        (old,) = _parked()
        record = _evaluate(tmp_path, "relu", "relu_correct", verified_trials=3)  # different options
        assert "prestarted_workers" not in record["environment"]
        assert not old.alive() and not old.work.exists()
    finally:
        discard_standby()


def test_an_unused_standby_exits_with_its_workers_and_leaves_no_files(tmp_path):
    _evaluate(tmp_path, "relu", "relu_correct")
    (standby,) = _parked()
    deadline = time.monotonic() + 30
    pids: list[int] = []
    while time.monotonic() < deadline and len(pids) < 3:  # the harness and both of its workers are up
        pids = processes_in(standby.work)
        time.sleep(0.2)
    assert len(pids) == 3
    discard_standby()
    assert not standby.alive() and not standby.work.exists()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.1)
    assert all(_gone(p) for p in pids)
    assert list((tmp_path / "work").iterdir()) == []
