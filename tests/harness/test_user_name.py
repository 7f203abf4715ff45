"""Every harness process can ask for its user name, though its uid has no passwd entry.

On the H100 (2026-12-05, the launcher's unprivileged uids) every evaluation failed its reference warm-up with
`KeyError: 'getpwuid(): uid not found: 300516'`: torch's inductor asks getpass.getuser() for its cache folder on
CUDA, and the launcher hands its processes no USER or LOGNAME. Here a reference and a kernel ask directly."""

from __future__ import annotations

from pathlib import Path

from evaluator.harness.environ import harness_env, worker_env
from evaluator.runner import run_evaluation

ASKS = """
import getpass
import torch
import torch.nn as nn

class {name}(nn.Module):
    def forward(self, x):
        assert getpass.getuser()  # what torch._inductor's default cache folder does
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
"""


def test_a_reference_and_a_kernel_that_ask_for_their_user_name_run(tmp_path: Path) -> None:
    record = run_evaluation(
        problem_source=ASKS.format(name="Model"),
        kernel_source=ASKS.format(name="ModelNew"),
        device="cpu",
        timeout=120,
        work_root=tmp_path / "work",
        options={"quick": True},
    )
    assert record["status"] == "ok", record.get("error")
    assert record["correct"] is True


def test_every_harness_environment_names_a_user_without_the_callers() -> None:
    for env in (harness_env(Path("/nowhere"), base={}), worker_env(private_dir=Path("/nowhere"), base={})):
        assert env["USER"] and env["LOGNAME"] == env["USER"]
    assert harness_env(Path("/nowhere"), base={"USER": "root"})["USER"] != "root"  # not the caller's name
