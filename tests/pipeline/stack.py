"""A real deployment in subprocesses for end-to-end tests: `manage.py runserver` + `celery worker` processes that
share one database and one broker, configured only through environment variables (as production is)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.pipeline.helpers import DEMO_DIR, REPO_ROOT

PYTHON = sys.executable
CELERY = str(Path(sys.executable).parent / "celery")
SCRUBBED = ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "CACHE_URL", "SQLITE_PATH", "VAR_DIR", "CELERY_QUEUE_DIR",
            "DJANGO_SETTINGS_MODULE", "CELERY_TASK_ALWAYS_EAGER")  # fmt: skip

SETUP = """
from django.contrib.auth import get_user_model
from leaderboard.services.tokens import api_token_create
from leaderboard.services.problems import problems_import_path
problems_import_path(path=__import__("pathlib").Path({demo!r}) / "problems", problem_set="demo", demo=True)
user = get_user_model().objects.create_user(username="lab", password="lab-pw-123456")
print("TOKEN=" + api_token_create(user=user))
"""


def reachable(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Stack:
    """Web server, workers and management commands against one configuration. Always call stop()."""

    def __init__(self, root: Path, *, hardware: str = "cpu", env: dict[str, str] | None = None) -> None:
        self.root = root
        self.hardware = hardware
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
        self.env.update(
            SECRET_KEY="e2e-secret",
            DJANGO_DEBUG="False",
            VAR_DIR=str(root / "var"),
            EVALUATOR_DEFAULT_HARDWARE=hardware,
            PYTHONUNBUFFERED="1",
            LOG_LEVEL="WARNING",
            **(env or {}),
        )
        self.procs: dict[str, subprocess.Popen] = {}
        self.token = ""

    def manage(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(
            [PYTHON, "manage.py", *args], cwd=REPO_ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def setup(self) -> None:
        self.manage("migrate", "--noinput")
        out = self.manage("shell", "-c", SETUP.format(demo=str(DEMO_DIR)))
        self.token = next(line[6:] for line in out.splitlines() if line.startswith("TOKEN="))

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        log = open(self.root / f"{name}.log", "wb")  # closed with the process
        # Own session: stop()/kill() signal the whole group, including prefork children.
        self.procs[name] = subprocess.Popen(
            argv,
            cwd=REPO_ROOT,
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start_web(self) -> None:
        self._start("web", [PYTHON, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/api/llms/", timeout=2).read()
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("web server did not start: " + self.log("web"))

    def start_worker(self, name: str, *, hardware: str | None = None, env: dict[str, str] | None = None) -> None:
        self._start(
            name,
            [CELERY, "-A", "config", "worker", "-Q", f"eval-{hardware or self.hardware}", "-c", "1",
             "--prefetch-multiplier", "1", "-n", f"{name}@%h", "-l", "INFO", "--without-gossip", "--without-mingle",
             "--without-heartbeat"],
            env=env,
        )  # fmt: skip

    def kill(self, name: str) -> None:
        """SIGKILL a process group: the worker gets no chance to clean up or requeue anything."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for name, proc in list(self.procs.items()):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            self.procs.pop(name)

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def client(self, *args: str, timeout: float = 400) -> subprocess.CompletedProcess:
        """Run the CLI client exactly as a lab would."""
        return subprocess.run(
            [PYTHON, "-m", "client", *args, "--url", self.url, "--token", self.token],
            cwd=REPO_ROOT,
            env={"PATH": os.environ.get("PATH", "")},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=10) as response:
            return json.loads(response.read())

    def db_facts(self, submission_ids: list[int]) -> dict[str, Any]:
        """Counts straight from the database, to check nothing is double-counted."""
        code = (
            "import json; from evaluator.models import Evaluation, DistributionResult; "
            "from catalogue.models import Submission, Kernel; "
            f"ids = {submission_ids!r}; "
            "print(json.dumps({'submissions': [dict(id=s.pk, status=s.status, kernels=s.kernel_count, "
            "evaluated=s.evaluated_count, correct=s.correct_count) for s in Submission.objects.filter(pk__in=ids)"
            ".order_by('pk')], 'kernel_rows': Kernel.objects.filter(submission__in=ids).count(), "
            "'evaluations': list(Evaluation.objects.filter(kernel__submission__in=ids).order_by('pk')"
            ".values('id', 'status', 'attempts', 'is_current', 'result_status', 'correct')), "
            "'distribution_rows': DistributionResult.objects.filter(evaluation__kernel__submission__in=ids).count()}))"
        )
        return json.loads(self.manage("shell", "-c", code).strip().splitlines()[-1])
