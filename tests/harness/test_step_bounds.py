"""A first call bounded by what it does (issue 38) and no step without a bound (issue 42).

The build allowance (load_cold_timeout_s) applies only while the kernel is seen compiling: a compiler among its
processes, or the candidate worker's watcher thread seeing a build in the worker's own process (torch.compile,
Triton, load_inline). A first forward that spins without compiling ends at the normal hang cap; a slow first build
still passes. Every candidate step after the kernel's import has a bound, SET_PROBLEM included.

Triton has no CPU backend here, so its first-call build is covered on the CPU only through the watcher's module
list (build_signal.BUILD_MODULES) and on the H200 by the GPU suite.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from evaluator.harness.orchestrator.build_watch import BuildAllowance, building
from evaluator.harness.workers import build_signal
from evaluator.runner import run_evaluation

from .conftest import KERNELS, PROBLEMS

REDTEAM = Path(__file__).resolve().parents[1] / "redteam"

SPIN = """
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            pass
"""

# Replaces the worker's own load_problem (and the copy it captured) before SET_PROBLEM calls it.
SET_PROBLEM_HANG = """
import sys

import torch
import torch.nn as nn


def _stuck(source):
    while True:
        pass


worker = sys.modules["__main__"]
worker.load_problem = _stuck
worker._load_problem = _stuck


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.slow  # waits out a 30 s hang cap by design
def test_an_endless_first_forward_ends_at_the_hang_cap_not_the_build_allowance(evaluate):
    started = time.monotonic()
    record = evaluate("relu", kernel_source=SPIN, timeout=600, load_cold_timeout_s=120.0)
    elapsed = time.monotonic() - started
    assert record["status"] == "timeout" and record["correct"] is False, record["error"]
    cap = re.search(r"hung: its first run in this process ran past (\d+) s", record["error"])
    assert cap and 30 <= int(cap.group(1)) < 40, record["error"]  # 20x the reference's first call + 30 s
    assert "no build was seen" in record["error"], record["error"]
    assert record["phases"]["total"] < 60 and elapsed < 120, (record["phases"], elapsed)  # 120 s before


@pytest.mark.slow  # builds a C++ extension on the first forward, and a torch.compile kernel (tens of seconds each)
@pytest.mark.parametrize(
    ("problem", "kernel"),
    [
        (PROBLEMS / "relu.py", KERNELS / "relu_cpp_lazy.py"),
        (REDTEAM / "problems" / "linear_relu.py", REDTEAM / "legit" / "torch_compiled_linear_relu.py"),
    ],
    ids=["load_inline", "torch_compile"],
)
def test_a_slow_first_build_still_passes_with_a_short_hang_cap(tmp_path, problem, kernel):
    """A 3 s hang cap, far shorter than either build: only the time seen compiling lets them finish."""
    record = run_evaluation(
        problem_source=problem.read_text(),
        kernel_source=kernel.read_text(),
        device="cpu",
        timeout=600,
        work_root=tmp_path / "work",
        options={"quick": True, "hang_grace_s": 3.0},
    )
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    assert record["environment"]["compile_limit_s"] == 420.0 and record["environment"]["load_limit_s"] == 120.0


@pytest.mark.slow  # builds a C++ extension on the first forward
def test_a_build_past_the_build_limit_is_cut_there(evaluate):
    record = evaluate("relu", "relu_cpp_lazy", timeout=600, hang_grace_s=3.0, load_cold_timeout_s=8.0)
    assert record["status"] == "timeout", record["error"]
    assert "build ran past its 8 s limit during run (seen compiling: " in record["error"], record["error"]


@pytest.mark.slow  # starts the real harness
def test_a_set_problem_hang_ends_within_the_load_bound(evaluate):
    """Issue 42: a kernel whose import replaces the worker's load_problem held the worker until the harness timeout
    (SET_PROBLEM had no bound); it ends at the load step's bound now."""
    record = evaluate("relu", kernel_source=SET_PROBLEM_HANG, timeout=90, load_timeout_s=6.0)
    assert record["status"] == "timeout", record["error"]
    assert "hung: set_problem ran past 6 s (the load step's bound" in record["error"], record["error"]
    assert record["phases"]["total"] < 45, record["phases"]


# --- the parts, without a harness --------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_allowance_adds_only_time_seen_building_up_to_the_ceiling():
    clock, seen = _Clock(), [None]
    allowance = BuildAllowance(lambda: seen[0], ceiling_s=10.0, hard_end=1000.0, clock=clock)
    deadline = 103.0  # a 3 s step
    clock.now = 101.0
    assert allowance.extend(deadline) == deadline  # spinning, no build: the clock runs
    seen[0] = "cc1plus"
    clock.now = 102.5
    deadline = allowance.extend(deadline)
    assert deadline == 104.5 and allowance.built_s == 1.5 and allowance.seen == "cc1plus"
    clock.now = 109.0
    deadline = allowance.extend(deadline)
    assert deadline == 110.0 and allowance.capped  # never past start + ceiling
    clock.now = 109.5
    assert allowance.extend(deadline) == 110.0
    early = BuildAllowance(lambda: "ninja", ceiling_s=10.0, hard_end=104.0, clock=clock)
    clock.now = 111.0
    assert early.extend(103.0) == 104.0  # nor past the evaluation's deadline


def test_a_compiler_among_the_processes_is_seen(tmp_path):
    """A compiler is told by its process name; the processes are fresh ones (this test process may hold a build
    watcher thread of its own, started by a worker module another test imported)."""
    fake = tmp_path / "cc1plus"
    sleep = shutil.which("sleep") or "/bin/sleep"
    shutil.copy(sleep, fake)
    proc = subprocess.Popen([str(fake), "30"])
    plain = subprocess.Popen([sleep, "30"])
    try:
        assert building([plain.pid, proc.pid]) == "cc1plus"
        assert building([plain.pid]) is None
    finally:
        for child in (proc, plain):
            child.kill()
            child.wait()


def test_the_worker_watcher_names_a_build_in_its_own_process():
    """The watcher thread names itself BUILDING while a build module's frame is on the main thread (and for HOLD_S
    after), and the orchestrator's probe reads that name from /proc; idle again once the step is over."""
    watch = build_signal.BuildWatch()
    watch._main = threading.get_ident()  # this test's thread stands for the worker's main thread
    watch.start()
    namespace = {"__name__": "torch._inductor.kbv_test", "time": time}
    exec("def lower(seconds):\n    time.sleep(seconds)\n", namespace)  # a function of a build module
    comm = f"/proc/self/task/{watch.thread.native_id}/comm"
    with watch.watching():
        time.sleep(0.5)
        assert open(comm).read().strip() == build_signal.IDLE and building([os.getpid()]) is None
        namespace["lower"](0.6)
        assert open(comm).read().strip() == build_signal.BUILDING
        assert building([os.getpid()]) == "a build in the worker's process (torch.compile, Triton, load_inline)"
    time.sleep(0.5)
    assert open(comm).read().strip() == build_signal.IDLE
