"""Processes that outlive their worker fail the kernel's containment check, but only the kernel's: the reference's
own helpers (inductor's compile-worker pool under the compile baseline on a many-core GPU host: a child and its
children) are orphaned the same way when the reference worker exits, and are killed without being counted against
the kernel. Real harness on the CPU, in each sandbox mode this host can run as root."""

from __future__ import annotations

import os
import uuid

import pytest

from evaluator.runner import run_evaluation
from tests.conftest import processes_with
from tests.redteam.sandbox_helpers import MODE, RELU

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's own uid per evaluation needs root"),
]

# A pool like inductor's: a child that starts a child of its own, both left running when their parent exits.
POOL = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'import subprocess, sys, time; "
    'subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]]); time.sleep(120)\', '
    "'__MARKER__'])\n"
)
# A daemon: double-forked into its own session, so it is an orphan at once.
DAEMON = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'import os, time; os.fork() and os._exit(0); os.setsid(); "
    "time.sleep(120)', '__MARKER__'])\n"
)
PLAIN_KERNEL = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
MODES = ["uid", pytest.param("namespaces", marks=pytest.mark.skipif(MODE != "namespaces", reason="no bubblewrap"))]


@pytest.fixture
def sandbox(request, monkeypatch) -> str:
    monkeypatch.setenv("KBV_SANDBOX", request.param)  # read by the orchestrator (runner._harness_env passes it)
    return request.param


def _evaluate(problem: str, kernel: str, tmp_path) -> dict:
    return run_evaluation(
        problem_source=problem,
        kernel_source=kernel,
        device="cpu",
        timeout=300,
        work_root=tmp_path / "work",
        options={"quick": True, "process_pairs": 2, "max_process_pairs": 2},  # one respawn, then the stop
    )


def _containment(record: dict) -> dict | None:
    return next((c for c in record.get("checks", []) if c["name"] == "process_containment"), None)


@pytest.mark.parametrize("sandbox", MODES, indirect=True)
@pytest.mark.parametrize("spawn", [POOL, DAEMON], ids=["pool", "daemon"])
def test_the_references_orphans_are_killed_but_not_counted_against_the_kernel(sandbox, spawn, tmp_path):
    marker = f"kbv-ref-helper-{uuid.uuid4().hex}"
    in_init = "".join(f"        {line}\n" for line in spawn.replace("__MARKER__", marker).splitlines())
    problem = RELU.replace("        super().__init__()\n", "        super().__init__()\n" + in_init)
    assert marker in problem
    record = _evaluate(problem, PLAIN_KERNEL, tmp_path)
    assert record["environment"]["sandbox"] == sandbox
    assert record["status"] == "ok", record.get("error")
    assert _containment(record) is None, _containment(record)
    assert not processes_with(marker), "the reference's helpers outlived the evaluation"


@pytest.mark.parametrize("sandbox", ["uid"], indirect=True)  # under namespaces they die with the kernel's namespace
def test_the_kernels_orphans_fail_containment(sandbox, tmp_path):
    marker = f"kbv-kernel-helper-{uuid.uuid4().hex}"
    record = _evaluate(RELU, DAEMON.replace("__MARKER__", marker) + PLAIN_KERNEL, tmp_path)
    check = _containment(record)
    assert check is not None and check["passed"] is False, record.get("checks")
    assert not processes_with(marker), "the kernel's orphan outlived the evaluation"
