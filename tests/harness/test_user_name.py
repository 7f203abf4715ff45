"""Every harness process can ask for its user name, though its uid has no passwd entry.

On the H100 (2026-12-05, the launcher's unprivileged uids) every evaluation failed its reference warm-up with
`KeyError: 'getpwuid(): uid not found: 300516'`: torch's inductor asks getpass.getuser() for its cache folder on
CUDA, and the launcher hands its processes no USER or LOGNAME. Here a reference and a kernel ask directly."""

from __future__ import annotations

from pathlib import Path

from evaluator.harness.environ import harness_env, worker_env


def test_a_reference_and_a_kernel_that_ask_for_their_user_name_run(evaluate) -> None:
    record = evaluate("asks_user_name", "asks_user_name")
    assert record["status"] == "ok", record.get("error")
    assert record["correct"] is True


def test_every_harness_environment_names_a_user_without_the_callers() -> None:
    for env in (harness_env(Path("/nowhere"), base={}), worker_env(private_dir=Path("/nowhere"), base={})):
        assert env["USER"] and env["LOGNAME"] == env["USER"]
    assert harness_env(Path("/nowhere"), base={"USER": "root"})["USER"] != "root"  # not the caller's name
