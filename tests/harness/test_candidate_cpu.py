"""The kernel's CPU time while the baseline is timed (harness/sandbox/candidate_cpu.py), read from /proc for real
processes: an idle one, a spinning one, a spinning child that left its session with setsid, and one orphaned to a
subreaper."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from evaluator.harness.sandbox.candidate_cpu import BUSY_LIMIT, CandidateCpu, busy_finding, used_between

IDLE = "import time; print('ready', flush=True); time.sleep(30)"
SPIN = "import time; print('ready', flush=True)\nwhile True: pass"
# the child spins in a session of its own: out of the parent's process group and session, still its child
SETSID_SPINNER = """
import os, time
if os.fork() == 0:
    os.setsid()
    while True:
        pass
print('ready', flush=True)
time.sleep(30)
"""
# an orchestrator in miniature: a subreaper whose worker double-forks a spinner and exits, orphaning it
ORPHAN = """
import ctypes, os, sys, time
from evaluator.harness.sandbox.candidate_cpu import CandidateCpu, used_between
from evaluator.harness.sandbox.hardening import become_subreaper
become_subreaper()
worker = os.fork()
if worker == 0:
    if os.fork() == 0:
        while True:
            pass
    os._exit(0)
os.waitpid(worker, 0)
watch = CandidateCpu(os.getpid())
before = watch.snapshot()
time.sleep(1.0)
print(len(before), round(used_between(before, watch.snapshot())))
for pid in watch.snapshot():
    os.kill(pid, 9)
"""


def _start(code: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _used_over(watch: CandidateCpu, seconds: float) -> float:
    before = watch.snapshot()
    time.sleep(seconds)
    return used_between(before, watch.snapshot())


def _kill_tree(proc: subprocess.Popen) -> None:
    for pid in CandidateCpu(proc.pid).snapshot():
        os.kill(pid, 9)
    proc.kill()
    proc.wait()


def test_an_idle_worker_uses_no_cpu_a_spinning_one_is_counted_and_the_excluded_one_is_not() -> None:
    idle = _start(IDLE)
    spin = _start(SPIN)
    me = os.getpid()
    try:
        assert _used_over(CandidateCpu(me, exclude=spin.pid), 1.0) < 30  # the idle one (and nothing else of ours)
        assert _used_over(CandidateCpu(me, exclude=idle.pid), 1.0) > 150  # up to a core; CI may be busy
    finally:
        _kill_tree(idle)
        _kill_tree(spin)


def test_a_child_that_left_the_session_is_still_counted() -> None:
    proc = _start(SETSID_SPINNER)
    try:
        watch = CandidateCpu(os.getpid())
        assert proc.pid in watch.snapshot() and len(CandidateCpu(proc.pid).snapshot()) == 1  # its setsid'd child
        assert _used_over(watch, 1.0) > 150
    finally:
        _kill_tree(proc)


def test_a_process_orphaned_to_the_subreaper_is_still_counted() -> None:
    out = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=60, check=True)
    found, used = (int(x) for x in out.stdout.split())
    assert found == 1, out  # the spinner, adopted by the subreaper
    assert used > 150, out


def test_the_finding_needs_both_the_fraction_and_the_floor() -> None:
    assert busy_finding(0.0, 10_000.0) == ""
    assert busy_finding(30.0, 100.0) == ""  # 30 % but at the 30 ms floor (three 10 ms accounting ticks)
    assert busy_finding(40.0, 100.0)
    assert busy_finding(BUSY_LIMIT * 10_000.0, 10_000.0) == ""  # at the limit
    assert "while the baseline was timed" in busy_finding(2_000.0, 10_000.0)


def test_an_honest_evaluation_records_an_idle_kernel_and_no_pinning_on_cpu(evaluate) -> None:
    """Through the real harness: the kernel's CPU time around the baseline blocks is recorded and near zero (both
    workers' OpenMP pools sleep when idle), and a CPU evaluation is not pinned (pinning is for CUDA)."""
    record = evaluate("scale_sum", "scale_sum_correct")
    assert record["status"] == "ok", record.get("error")
    busy = record["timing"]["candidate_cpu"]
    assert busy["baseline_wall_ms"] > 0
    assert busy["during_baseline_ms"] <= BUSY_LIMIT * busy["baseline_wall_ms"], busy
    assert record["timing"]["cpu"]["pinned"] is None and record["timing"]["cpu"]["why"] == "not CUDA"
    assert next(c for c in record["checks"] if c["name"] == "timer_integrity")["passed"] is True
