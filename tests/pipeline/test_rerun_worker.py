"""What `make run` starts (scripts/run_all.py: the site and one worker with beat) consumes the site's own re-runs
from their queue: a champion measured on another software stack is queued again on eval-cpu-rerun and the real
harness re-evaluates it there, never through the uploads queue, with the reaper running every few seconds."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.pipeline.helpers import DEMO_DIR, REPO_ROOT
from tests.pipeline.stack import SCRUBBED, free_port
from tests.pipeline.test_faults import wait_for

pytestmark = pytest.mark.slow

# A correct demo kernel, ranked, measured on torch 1.0.0, while the workers' latest verdict says torch 9.9.9.
SETUP = """
from django.utils import timezone
from catalogue.models import Problem
from evaluator.harness.record import Record
from evaluator.services.reruns import champions_rerun
from leaderboard.services.problems import problems_import_path
from tests.factories import EvaluationFactory, KernelFactory, LLMFactory, SubmissionFactory
from tests.pipeline.helpers import demo_kernel
problems_import_path(path=__import__("pathlib").Path({demo!r}) / "problems", problem_set="demo", demo=True)
for number, torch, llm in ((1, "1.0.0", "champion"), (3, "9.9.9", "other")):
    kernel = KernelFactory(
        problem=Problem.objects.get(problem_set="demo", level=1, problem_id=number), source=demo_kernel(1, number, 0),
        submission=SubmissionFactory(llm=LLMFactory(name=llm), hardware="cpu", problem_set="demo", kernel_count=1,
                                     evaluated_count=1, correct_count=1),
    )
    record = Record(status="ok", correct=True, standard_correct=True, speedup=2.0).to_dict()
    record["environment"].update(torch=torch)
    EvaluationFactory(kernel=kernel, hardware="cpu", result=record, finished_at=timezone.now())
[plan] = champions_rerun(hardware="cpu")
print("RERUN=" + ",".join(map(str, plan.queued)))
"""


def test_make_runs_worker_takes_a_rerun_from_its_own_queue(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(
        SECRET_KEY="rerun-worker",
        VAR_DIR=str(tmp_path / "var"),
        PORT=str(port),
        DJANGO_DEBUG="True",  # as `make run` sets it
        PYTHONUNBUFFERED="1",
        EVALUATOR_REAP_INTERVAL="2",  # the reaper runs while the re-run waits and runs...
        EVALUATOR_LOST_QUEUE_AFTER="1",  # ...and would call it lost at once if it did not count the re-run queue
    )

    def manage(*args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    manage("migrate", "--noinput")
    out = manage("shell", "-c", SETUP.format(demo=str(DEMO_DIR)))
    (rerun,) = [int(x) for x in next(line[6:] for line in out.splitlines() if line.startswith("RERUN=")).split(",")]
    log_path = tmp_path / "run_all.log"
    with open(log_path, "wb") as log:
        launcher = subprocess.Popen([sys.executable, "scripts/run_all.py"], cwd=REPO_ROOT, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

    def finished() -> dict | None:
        try:
            url = f"http://127.0.0.1:{port}/api/evaluations/{rerun}/"
            with urllib.request.urlopen(url, timeout=5) as answer:
                body = json.loads(answer.read())
        except OSError:
            return None
        return body if body["status"] in ("done", "failed") else None

    try:
        body = wait_for("the re-run's verdict", finished, timeout=420, interval=2, log="")
        text = log_path.read_text(errors="replace")
        assert body["status"] == "done", body["error"] + text[-3000:]
        assert body["re_evaluation"] is not None and body["seeds"]["fixed_before_run"] is True
        assert body["result"]["environment"]["seeds_digest"] == body["seeds"]["digest"]
        # Taken once, from the re-run queue: never re-sent to (nor run from) the uploads queue.
        assert re.findall(rf"evaluation {rerun} taken from queue (\S+)", text) == ["eval-cpu-rerun"], text[-3000:]
    finally:
        launcher.send_signal(signal.SIGTERM)
        try:
            launcher.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
