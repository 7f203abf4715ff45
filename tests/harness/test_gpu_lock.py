"""The GPU lock: many evaluations share the device for correctness, one owns it for timing, timers are not starved.

Runs on CPU: the lock is plain flock on files; processes stand in for evaluations.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.harness.gpu_lock import DeviceLock, LockTimeout

HOLD = """
import sys, time
from evaluator.harness.gpu_lock import DeviceLock
directory, mode, seconds, log, name = sys.argv[1:]
lock = DeviceLock(directory, "GPU-test")
with (lock.shared if mode == "shared" else lock.exclusive)(time.monotonic() + 30):
    with open(log, "a") as fh:
        fh.write(f"{time.monotonic():.4f} start {name}\\n")
    time.sleep(float(seconds))
    with open(log, "a") as fh:
        fh.write(f"{time.monotonic():.4f} end {name}\\n")
"""
REPO = Path(__file__).resolve().parents[2]


def _spans(log: Path) -> dict[str, tuple[float, float]]:
    spans: dict[str, list[float]] = {}
    for line in log.read_text().split("\n"):
        if line:
            stamp, _, name = line.split()
            spans.setdefault(name, []).append(float(stamp))
    return {k: (v[0], v[1]) for k, v in spans.items()}


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _start(directory: Path, mode: str, seconds: float, log: Path, name: str) -> subprocess.Popen:
    args = [sys.executable, "-c", HOLD, str(directory), mode, str(seconds), str(log), name]
    return subprocess.Popen(args, cwd=REPO)


def test_shared_holders_overlap_and_exclusive_holders_do_not(tmp_path):
    log = tmp_path / "log"
    procs = [_start(tmp_path, "shared", 1.0, log, f"s{i}") for i in range(2)]
    time.sleep(0.3)
    procs.append(_start(tmp_path, "exclusive", 0.5, log, "x"))
    for p in procs:
        assert p.wait(20) == 0
    spans = _spans(log)
    assert _overlap(spans["s0"], spans["s1"])  # correctness phases run together
    assert not _overlap(spans["x"], spans["s0"]) and not _overlap(spans["x"], spans["s1"])


def test_a_queued_timer_goes_before_later_readers(tmp_path):
    log = tmp_path / "log"
    first = _start(tmp_path, "shared", 1.5, log, "r1")
    time.sleep(0.4)
    timer = _start(tmp_path, "exclusive", 0.3, log, "x")
    time.sleep(0.4)
    late = _start(tmp_path, "shared", 0.2, log, "r2")  # arrives while the timer waits for r1
    for p in (first, timer, late):
        assert p.wait(20) == 0
    spans = _spans(log)
    assert spans["x"][0] >= spans["r1"][1]
    assert spans["r2"][0] >= spans["x"][1]  # not starved by a stream of readers


def test_waiting_past_the_deadline_raises_and_is_counted(tmp_path):
    holder = DeviceLock(tmp_path, "GPU-test")
    other = DeviceLock(tmp_path, "GPU-test")
    with holder.exclusive(time.monotonic() + 5):
        with pytest.raises(LockTimeout):
            with other.shared(time.monotonic() + 0.3):
                pass
    assert other.waited_s >= 0.3
    with other.shared(time.monotonic() + 1):  # free again once the holder leaves
        pass


def test_device_keys_are_separate_locks(tmp_path):
    a, b = DeviceLock(tmp_path, "GPU-aaaa"), DeviceLock(tmp_path, "GPU-bbbb")
    with a.exclusive(time.monotonic() + 1), b.exclusive(time.monotonic() + 1):
        pass
