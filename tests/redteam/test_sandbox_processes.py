"""Red team, the boundary around the kernel (issue: sandbox the kernel): processes. Two kernels evaluated at once
must not see, write to or signal each other; a kernel that hangs while timed must end its evaluation early; no
process of a kernel may outlive its evaluator, even one killed with SIGKILL. A kernel that attacks raises with what
it got; one the sandbox contains computes the right answer.

These run the real harness on the CPU in CI (as root there, so each kernel gets its own uid and bubblewrap's
namespaces: harness/sandbox/namespaces.py). The host's files and services: test_sandbox_host.py. The GPU cases (the
zero-copy hand-over through the sandbox, a hang in CUDA timing) run on the H200: benchmarks/sandbox_gpu.py.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evaluator.runner import run_evaluation
from tests.conftest import processes_with
from tests.redteam.sandbox_helpers import RELU, needs_namespaces

pytestmark = [needs_namespaces, pytest.mark.slow]

SNOOP = """
import glob, os, time
import torch
import torch.nn as nn

OTHER = "__OTHER__"
MINE = os.path.realpath(os.getcwd())
got = []
for path in glob.glob(OTHER + "/**", recursive=True) + glob.glob("/proc/[0-9]*/cwd/kernel.py"):
    if os.path.realpath(path).startswith(MINE):  # its own folder, seen through its own processes
        continue
    try:
        if os.path.isfile(path):
            got.append(f"read {path}: {open(path).read(40)!r}")
        with open(os.path.join(os.path.dirname(path), "planted.txt"), "w") as fh:
            fh.write("planted")
        got.append(f"wrote beside {path}")
    except OSError:
        pass
for pid in range(2, 4096):  # signal any process of another evaluation (same uid or not)
    try:
        if pid != os.getpid():
            os.kill(pid, 0)
            if not os.path.realpath(f"/proc/{pid}/cwd").startswith(MINE):
                got.append(f"could signal {pid}")
    except OSError:
        pass
if got:
    raise RuntimeError("SANDBOX ESCAPE " + " | ".join(got[:5]))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

SLOW = """
import time
import torch
import torch.nn as nn

time.sleep(__SLEEP__)  # while it sleeps, the other evaluation looks for it


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_two_kernels_evaluated_at_once_cannot_see_each_other(tmp_path):
    work = tmp_path / "work"
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(
            run_evaluation,
            problem_source=RELU,
            kernel_source=SLOW.replace("__SLEEP__", "20"),
            device="cpu",
            timeout=180,
            work_root=work,
            options={"quick": True, "keep_workdir": True},
        )
        deadline = time.monotonic() + 60
        while not list(work.glob("eval-*/candidate/kernel.py")) and time.monotonic() < deadline:
            time.sleep(0.2)
        others = list(work.glob("eval-*"))
        assert others, "the first evaluation never started"
        snoop = run_evaluation(
            problem_source=RELU,
            kernel_source=SNOOP.replace("__OTHER__", str(others[0])),
            device="cpu",
            timeout=120,
            work_root=work,
            options={"quick": True},
        )
        first = slow.result()
    assert snoop["status"] == "ok" and snoop["correct"] is True, snoop["error"]
    assert first["status"] == "ok" and first["correct"] is True, first["error"]
    assert snoop["environment"]["candidate_uid"] != first["environment"]["candidate_uid"]
    assert not list(work.rglob("planted.txt"))


HANG_IN_TIMING = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    calls = 0

    def forward(self, x):
        ModelNew.calls += 1
        if ModelNew.calls > 20:  # past the correctness gate (quick mode: 12 calls): hang while being timed
            while True:
                pass
        return torch.relu(x)
"""


def test_a_hang_in_the_timing_phase_ends_the_evaluation_early(tmp_path):
    started = time.monotonic()
    record = run_evaluation(
        problem_source=RELU,
        kernel_source=HANG_IN_TIMING,
        device="cpu",
        timeout=600,  # the outer bound; the hang must end it far sooner
        work_root=tmp_path / "work",
        options={"quick": True, "hang_grace_s": 5.0},
    )
    elapsed = time.monotonic() - started
    assert record["status"] == "timeout" and record["correct"] is False
    assert "hung" in record["error"], record["error"]
    assert elapsed < 90, f"a hung kernel held the evaluation for {elapsed:.0f} s"


LINGER = """
import subprocess, sys, time
import torch
import torch.nn as nn

DAEMON = "import os, time; os.fork() and os._exit(0); os.setsid(); time.sleep(600)"  # double fork, own session
subprocess.Popen([sys.executable, "-c", DAEMON, "__MARKER__"])
time.sleep(600)  # the import never ends: the test kills the evaluator meanwhile


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _launcher_above(pid: int) -> int:
    while pid > 1:
        if b"evaluator.harness.sandbox.launcher" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
            break
        pid = _parent(pid)
    return pid


def test_killing_the_evaluator_leaves_no_kernel_process(tmp_path):
    marker = f"kbv-linger-{uuid.uuid4().hex}"
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(
            run_evaluation,
            problem_source=RELU,
            kernel_source=LINGER.replace("__MARKER__", marker),
            device="cpu",
            timeout=600,
            work_root=tmp_path / "work",
            options={"quick": True},
        )
        # A loaded CI host may take minutes to reach the kernel's import; an evaluation that ends first says why. A
        # marked process seen once may be the daemon's first fork on its way out: walk up only from one seen in two
        # polls in a row (the daemon's own grandchild sleeps for minutes).
        deadline = time.monotonic() + 300
        seen: set[int] = set()
        pid = 0
        while pid <= 1 and not pending.done() and time.monotonic() < deadline:
            time.sleep(0.2)
            found = set(processes_with(marker))
            for start in found & seen:
                with contextlib.suppress(OSError):
                    pid = _launcher_above(start)
                    break
            seen |= found
        if pid <= 1:
            ended = pending.result() if pending.done() else "(still running)"
            pytest.fail(
                f"no lasting process of the kernel's daemon under a launcher (marked processes seen: {sorted(seen)}); "
                f"the evaluation ended with {ended!r:.2000}"
            )
        # From the kernel's grandchild up to its launcher (`python -m evaluator.harness.sandbox.launcher`,
        # root: it started the kernel's worker and holds everything of the evaluation), killed with no chance to
        # clean up. (Killing the orchestrator instead is the easy case: the launcher sees it go and ends the rest.)
        os.kill(pid, 9)
        with contextlib.suppress(Exception):  # the runner reports the dead harness as an infrastructure error
            pending.result(timeout=120)
    deadline = time.monotonic() + 20
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_with(marker), "a process of the kernel outlived its evaluator"


@pytest.mark.gpu
def test_a_hang_in_cuda_timing_ends_early_and_outputs_cross_the_sandbox_on_the_device(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA (benchmarks/sandbox_gpu.py records it on the H200)")
    record = run_evaluation(
        problem_source=RELU,
        kernel_source=HANG_IN_TIMING,
        device="cuda",
        timeout=600,
        work_root=tmp_path / "work",
        options={"quick": True, "hang_grace_s": 5.0},
    )
    assert record["environment"]["output_handover"] == "cuda_fd"
    assert record["status"] == "timeout" and "hung" in record["error"]
