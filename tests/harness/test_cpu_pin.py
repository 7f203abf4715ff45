"""Both workers on one leased CPU for timing (evaluator/harness/sandbox/cpu_pin.py): the lease and the pinning, on real
processes and their threads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.harness.sandbox.cpu_pin import CpuLease, pin_group

THREADED_CHILD = """
import threading, time
for _ in range(3):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
print("ready", flush=True)
time.sleep(30)
"""


def test_leases_never_share_a_cpu_and_never_take_the_lowest(tmp_path: Path) -> None:
    allowed = {1, 2, 3}
    leases = [CpuLease(tmp_path) for _ in range(4)]
    got = [lease.acquire(allowed) for lease in leases]
    assert sorted(c for c in got if c is not None) == [1, 2, 3]
    assert got.count(None) == 1  # every allowed CPU taken: the fourth evaluation times unpinned
    leases[0].release()
    again = CpuLease(tmp_path)
    assert again.acquire(allowed) == got[0]  # a released CPU can be leased again
    solo = CpuLease(tmp_path / "solo")
    assert solo.acquire() in (None, *sorted(os.sched_getaffinity(0))[1:])  # by default never the lowest CPU


def test_the_timing_cpus_are_set_aside_from_the_rest(monkeypatch) -> None:
    """On a 16-CPU GPU machine the highest CPU per GPU runs timed loops only; every other evaluation's work (the
    orchestrators and their workers) stays on the rest. A small machine sets none aside."""
    from evaluator.harness.sandbox import cpu_pin

    sixteen = set(range(16))
    monkeypatch.setattr(cpu_pin, "gpu_count", lambda: 1)
    assert cpu_pin.timing_cpus(sixteen) == [15]
    assert cpu_pin.general_cpus(sixteen) == list(range(15))
    monkeypatch.setattr(cpu_pin, "gpu_count", lambda: 2)
    assert cpu_pin.timing_cpus(sixteen) == [14, 15]
    assert 0 not in cpu_pin.timing_cpus(set(range(4))) and cpu_pin.timing_cpus(set(range(4))) == [2, 3]
    assert cpu_pin.general_cpus({0, 1}) == [0, 1] and cpu_pin.timing_cpus({0, 1}) == [1]  # nothing set aside


def test_pin_group_moves_every_thread_of_the_group(tmp_path: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    target = {cpus[-1]}
    proc = subprocess.Popen(
        [sys.executable, "-c", THREADED_CHILD], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        tids = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task")]
        assert len(tids) >= 4
        assert pin_group(proc.pid, target) >= 4
        for tid in tids:
            assert os.sched_getaffinity(tid) == target
        assert os.sched_getaffinity(os.getpid()) != target  # the caller itself stays where it was
    finally:
        proc.kill()
        proc.wait()
