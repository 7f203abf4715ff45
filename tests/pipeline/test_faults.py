"""Faults that must lose no work, each against real processes: a parser bomb in an upload, a worker
killed with SIGKILL in the middle of an evaluation, and `make run`'s launcher losing its worker."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import processes_in
from tests.pipeline.helpers import DATA_DIR, REPO_ROOT, demo_kernel, kernel_name
from tests.pipeline.stack import CELERY, Stack, free_port

pytestmark = pytest.mark.slow

PARSER_BOMB = "import torch\n\ny = " + "-" * 100_000 + "1\n"  # ast.parse: MemoryError (the parser's stack)


def wait_for(what: str, check, timeout: float = 120, interval: float = 0.5, log: str = "") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{log}"
        time.sleep(interval)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(tmp_path, env={"EVALUATOR_HEARTBEAT_INTERVAL": "1", "EVALUATOR_HEARTBEAT_STALE": "5"})
    try:
        stack.setup()
        stack.start_web()
        yield stack
    finally:
        stack.stop()


def start_worker(stack: Stack, name: str) -> None:
    """A worker on the evaluation queue and the default queue (the static audit), as `make run` starts one."""
    stack._start(
        name,
        [CELERY, "-A", "config", "worker", "-Q", "eval-cpu,default", "-c", "1", "--prefetch-multiplier", "1",
         "-n", f"{name}@%h", "-l", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
    )  # fmt: skip


def submit_file(stack: Stack, path: Path) -> int:
    created = stack.client("--json", "submit", str(path), "--llm", "faults", "--problem-set", "demo")
    assert created.returncode == 0, created.stderr
    return json.loads(created.stdout.strip().splitlines()[-1])["id"]


def shell_json(stack: Stack, code: str) -> object:
    return json.loads(stack.manage("shell", "-c", f"import json; {code}").strip().splitlines()[-1])


def test_a_parser_bomb_gets_an_audit_flag_and_the_worker_keeps_evaluating(stack: Stack, tmp_path: Path) -> None:
    start_worker(stack, "worker")
    bomb = tmp_path / kernel_name(1, 1)
    bomb.write_text(PARSER_BOMB)
    bomb_id = submit_file(stack, bomb)
    flags = (
        "from evaluator.models import AuditFlag; print(json.dumps(list(AuditFlag.objects.filter("
        f"kernel__submission={bomb_id}, source='rule').values_list('source_name', 'rationale'))))"
    )
    found = wait_for("the bomb's audit flag", lambda: shell_json(stack, flags), log=stack.log("worker"))
    assert any(rule in {"unparseable", "audit_error"} for rule, _ in found), found
    assert stack.procs["worker"].poll() is None, stack.log("worker")
    # The same worker still evaluates: the bomb's own evaluation ends, and so does a good kernel's after it.
    good = tmp_path / "good" / kernel_name(1, 2)
    good.parent.mkdir()
    good.write_text(demo_kernel(1, 2))
    good_id = submit_file(stack, good)
    status = lambda: [s["status"] for s in stack.db_facts([bomb_id, good_id])["submissions"]]  # noqa: E731
    wait_for("both submissions to finish", lambda: "received" not in status() and "running" not in status(),
             timeout=300, log=stack.log("worker"))  # fmt: skip
    facts = stack.db_facts([bomb_id, good_id])
    assert [e["status"] for e in facts["evaluations"]] == ["done", "done"]
    assert facts["evaluations"][1]["correct"] is True
    assert stack.procs["worker"].poll() is None, stack.log("worker")


def test_a_worker_killed_mid_evaluation_is_detected_by_heartbeat_and_its_harness_removed(
    stack: Stack, tmp_path: Path
) -> None:
    work = tmp_path / "var" / "work"
    start_worker(stack, "worker")
    slow = tmp_path / kernel_name(1, 1)
    slow.write_text((DATA_DIR / "slow_relu_kernel.py").read_text())
    sub_id = submit_file(stack, slow)
    beat = f"from evaluator.models import Evaluation; print(json.dumps(str(Evaluation.objects.get(kernel__submission={sub_id}).heartbeat_at)))"  # noqa: E501
    wait_for("the evaluation to run", lambda: stack.db_facts([sub_id])["evaluations"][0]["status"] == "running")
    first_beat = shell_json(stack, beat)
    folders = wait_for("the harness work folder", lambda: list(work.glob("eval-*")))
    harness = wait_for("the harness processes", lambda: [p for f in folders for p in processes_in(f)])
    assert wait_for("a heartbeat", lambda: shell_json(stack, beat) != first_beat, timeout=30)

    stack.kill("worker")  # SIGKILL to the worker's process group; the harness leads a session of its own
    killed_at = time.monotonic()
    (evaluation,) = stack.db_facts([sub_id])["evaluations"]
    assert (evaluation["status"], evaluation["attempts"]) == ("running", 1)
    # The harness dies with its caller (PR_SET_PDEATHSIG), its workers with it.
    wait_for("the orphaned harness to die", lambda: not any(os.path.exists(f"/proc/{p}") for p in harness), 60)

    time.sleep(6)  # EVALUATOR_HEARTBEAT_STALE=5 in this stack
    out = stack.manage("reap_evaluations")  # no --stale-after: the missed heartbeat alone gives it away
    assert f"requeued 1: [{evaluation['id']}]" in out, out
    assert not any(f.exists() for f in folders), out  # the dead worker's work folder is gone
    start_worker(stack, "worker2")
    wait_for("the requeued evaluation", lambda: stack.db_facts([sub_id])["submissions"][0]["status"] == "done",
             timeout=120, log=stack.log("worker2"))  # fmt: skip
    assert time.monotonic() - killed_at < 120
    facts = stack.db_facts([sub_id])
    (evaluation,) = facts["evaluations"]
    assert (evaluation["status"], evaluation["attempts"], evaluation["is_current"]) == ("done", 2, True)
    assert facts["submissions"][0]["evaluated"] == 1 and facts["distribution_rows"] in {0, 4}
    assert stack.manage("reap_evaluations").startswith("requeued 0")  # finished exactly once, nothing to redo
    assert list(work.glob("eval-*")) == [] and not any(os.path.exists(f"/proc/{p}") for p in harness)


def _children_log(path: Path) -> dict[str, list[int]]:
    pids: dict[str, list[int]] = {}
    for name, pid in re.findall(r"run_all: (\w+) started \(pid (\d+)\)", path.read_text(errors="replace")):
        pids.setdefault(name, []).append(int(pid))
    return pids


def _serves(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return response.status == 200
    except OSError:
        return False


def test_run_all_keeps_serving_restarts_a_dead_worker_and_stops_everything(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(VAR_DIR=str(tmp_path / "var"), PORT=str(port), DJANGO_DEBUG="True", PYTHONUNBUFFERED="1")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO_ROOT, env=env, check=True,
                   capture_output=True)  # fmt: skip
    log_path = tmp_path / "run_all.log"
    with open(log_path, "wb") as log:
        launcher = subprocess.Popen([sys.executable, "scripts/run_all.py"], cwd=REPO_ROOT, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/api/llms/"
    try:
        wait_for("the site", lambda: _serves(url), timeout=60, log=log_path.read_text())
        (first,) = wait_for("the worker", lambda: _children_log(log_path).get("worker"))
        web = _children_log(log_path)["web"]
        time.sleep(3)  # let it fork its pool
        group = [p for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == first]
        assert len(group) >= 2, "the worker and its pool child share one process group"
        os.kill(first, signal.SIGKILL)
        workers = wait_for("a new worker", lambda: (w := _children_log(log_path)["worker"]) and len(w) > 1 and w,
                           timeout=30, log=log_path.read_text())  # fmt: skip
        assert _serves(url), log_path.read_text()
        assert _children_log(log_path)["web"] == web  # the web server was never restarted
        assert os.path.exists(f"/proc/{workers[-1]}")
        assert wait_for("the old pool children to go", lambda: not [p for p in group if _alive(int(p))], 10)
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=40) == 0
        everything = [*web, workers[-1]]
        assert not [p for p in everything if _alive(p)], log_path.read_text()
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == workers[-1]]
        assert not _serves(url)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
        for pid in [*_children_log(log_path).get("web", []), *_children_log(log_path).get("worker", [])]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
