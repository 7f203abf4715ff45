"""The candidate worker's watch on timer and checker functions (tamper_watch.py): torch's own rebinding of
`torch.manual_seed` when torch._dynamo is first imported (the harness's own torch.profiler call does it on CUDA;
torch.compile in a kernel does it anywhere) is not tampering; a kernel's replacement still is.

Each case runs in a fresh interpreter: the watch captures its functions at import, once per process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PRELUDE = """
import torch
from evaluator.harness.workers import tamper_watch
original = torch.manual_seed
"""


def _replaced(body: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + body + "\nprint(','.join(tamper_watch.replaced_functions()))"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def test_nothing_replaced_at_start():
    assert _replaced("") == ""


def test_the_profiler_importing_dynamo_is_not_tampering():
    # What the harness's "what ran" profile does on CUDA: torch.profiler imports torch._dynamo, which rebinds
    # torch.manual_seed (this failed every GPU evaluation with timer_integrity before the watch knew it).
    body = """
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU]):
    torch.ones(3) + 1
assert torch.manual_seed is not original  # torch did rebind it
"""
    assert _replaced(body) == ""


def test_a_kernels_replacement_is_still_tampering():
    assert _replaced("torch.manual_seed = lambda seed: None") == "torch.manual_seed"


def test_a_disable_wrapper_of_another_function_is_tampering():
    body = """
import torch._dynamo
torch.manual_seed = torch._disable_dynamo(lambda seed: None)
"""
    assert _replaced(body) == "torch.manual_seed"


def test_torchs_wrapper_pointed_elsewhere_is_tampering():
    # The genuine wrapper, its closure cell rewritten to call something else.
    body = """
import torch._dynamo
wrapper = torch.manual_seed
cells = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__))
cells["fn"].cell_contents = lambda seed: None
"""
    assert _replaced(body) == "torch.manual_seed"


@pytest.mark.parametrize("target", ["time.perf_counter", "torch.cuda.synchronize"])
def test_other_watched_functions(target):
    module, name = target.rsplit(".", 1)
    assert target in _replaced(f"import {module}\nsetattr({module}, {name!r}, lambda *a: None)").split(",")


def test_replacing_the_launch_lead_or_the_flush_is_tampering():
    """A kernel that turns the lead into a partial one (leaving SMs free for untimed side-stream work behind it) or
    skips the flush, by patching the class in its own process."""
    body = "from evaluator.harness.workers import lead, l2\nlead.LaunchLead._launch = lambda self: None\n"
    assert "evaluator.harness.workers.lead.LaunchLead._launch" in _replaced(body).split(",")
    body = "from evaluator.harness.workers import l2\nl2.L2Flusher.__call__ = lambda self: None\n"
    assert "evaluator.harness.workers.l2.L2Flusher.__call__" in _replaced(body).split(",")
