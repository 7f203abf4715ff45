"""Red team, the privileged side: nothing that reads the kernel's words runs as root. During a real evaluation started
as root, the orchestrator (it reads the workers' replies, copies build products and writes the record) and the
reference worker run as a uid of the evaluation's own, neither root's nor the kernel's, with no capability at all
(effective, permitted and bounding), no_new_privs, and a network namespace that is not the host's; the kernel runs as
a third uid. Only the launcher (evaluator/harness/sandbox/launcher/) keeps root. Read from /proc, not from what the
processes say of themselves.

On main 22ad196 the orchestrator was uid 0 with CAP_DAC_OVERRIDE and seven other capabilities.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from evaluator.runner import run_evaluation
from tests.redteam.sandbox_helpers import RELU, needs_namespaces

pytestmark = [needs_namespaces, pytest.mark.slow]

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="privilege separation needs a root evaluator")

SLOW_KERNEL = """
import time
import torch
import torch.nn as nn

time.sleep(__SLEEP__)  # long enough for the test to look at every process of the evaluation


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _processes(work: Path) -> dict[str, list[int]]:
    """This evaluation's processes by role: their command lines, and their working folder inside `work` (other
    evaluations may run on this machine meanwhile)."""
    found: dict[str, list[int]] = {"orchestrator": [], "reference": [], "candidate": []}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if not os.readlink(entry / "cwd").startswith(f"{work}/"):
                continue
        except OSError:
            continue
        if b"evaluator.harness" in argv and b"--spec" in argv:
            found["orchestrator"].append(int(entry.name))
        elif b"evaluator.harness.workers.reference_worker" in argv:
            found["reference"].append(int(entry.name))
        elif b"evaluator.harness.workers.candidate_worker" in argv and b"--" not in argv:  # not bwrap's own
            found["candidate"].append(int(entry.name))
    return found


@ROOT_ONLY
def test_during_an_evaluation_only_the_launcher_is_root(tmp_path):
    marker = f"kbv-privilege-{uuid.uuid4().hex[:8]}"
    work = tmp_path / marker
    result: dict = {}
    evaluation = threading.Thread(
        target=lambda: result.update(
            record=run_evaluation(
                problem_source=RELU,
                kernel_source=SLOW_KERNEL.replace("__SLEEP__", "15"),
                device="cpu",
                timeout=240,
                work_root=work,
                options={"quick": True},
            )
        )
    )
    evaluation.start()
    seen: dict[str, dict[str, str]] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(seen) < 3 and evaluation.is_alive():
        for role, pids in _processes(work).items():
            if pids and role not in seen:
                try:
                    seen[role] = _status(pids[0]) | {"pid": str(pids[0])}
                except OSError:
                    continue
        time.sleep(0.2)
    orchestrator_net = os.readlink(f"/proc/{seen['orchestrator']['pid']}/ns/net") if "orchestrator" in seen else ""
    evaluation.join(300)
    assert set(seen) == {"orchestrator", "reference", "candidate"}, seen.keys()
    uids = {role: {int(u) for u in status["Uid"].split()} for role, status in seen.items()}
    for role in ("orchestrator", "reference"):
        status = seen[role]
        assert 0 not in uids[role], f"the {role} runs as root: {status['Uid']}"
        assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0, status
        assert int(status["CapBnd"], 16) == 0 and int(status["CapAmb"], 16) == 0, status
        assert status["NoNewPrivs"] == "1", status
    assert uids["orchestrator"] == uids["reference"] and len(uids["orchestrator"]) == 1
    assert not uids["candidate"] & (uids["orchestrator"] | {0}), uids  # the kernel: a third uid
    assert int(seen["candidate"]["CapEff"], 16) == 0
    assert orchestrator_net and orchestrator_net != os.readlink("/proc/self/ns/net"), "the host's network"
    record = result["record"]
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    orchestrator = record["environment"]["orchestrator"]
    assert orchestrator["uid"] == min(uids["orchestrator"]) and orchestrator["capabilities"] == []
    assert orchestrator["no_new_privs"] is True and orchestrator["network_interfaces"] == ["lo"]
    assert orchestrator["launcher"] == "privileged"
    assert not list(work.glob("eval-*")), "the evaluation's work folder was left behind"
