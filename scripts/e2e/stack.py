"""Steps 2-5 and 8-9 of scripts/gpu_e2e.py: management commands, the web server and the Celery workers against one
VAR_DIR (Deployment), and the Django shell snippets that set up the user, import the demo set and export the run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from .common import REPO, run


class Deployment:
    """Management commands, the web server and the workers against one VAR_DIR. Always call stop()."""

    def __init__(self, py: str, var: Path, env: dict[str, str], port: int) -> None:
        self.py, self.var, self.env, self.port = py, var, env, port
        self.url = f"http://127.0.0.1:{port}"
        self.procs: dict[str, subprocess.Popen] = {}

    def manage(self, *args: str, timeout: float = 300) -> str:
        return run([self.py, "manage.py", *args], cwd=REPO, env=self.env, timeout=timeout).stdout

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        logfile = open(self.var / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        self.procs[name] = subprocess.Popen(
            argv,
            cwd=REPO,
            env={**self.env, **(env or {})},
            stdout=logfile,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: stop() ends Celery's pool processes too
        )

    def start_web(self) -> None:
        self.start("web", [self.py, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.procs["web"].poll() is not None:
                raise RuntimeError("web server exited:\n" + self.tail("web"))
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.url}/api/llms/", timeout=5).read()
                return
            time.sleep(0.5)
        raise RuntimeError("web server did not answer:\n" + self.tail("web"))

    def start_worker(
        self, name: str, queues: str, slots: int, env: dict[str, str] | None = None, beat: bool = False
    ) -> None:
        argv = [
            self.py,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            queues,
            "-c",
            str(slots),
            "--prefetch-multiplier",
            "1",
            "-n",
            f"{name}@%h",
            "-l",
            "INFO",
            "--without-gossip",
            "--without-mingle",
        ]
        if beat:
            argv += ["--beat", "--schedule", str(self.var / "celerybeat-schedule")]
        self.start(name, argv, env)

    def alive(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is None]

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)

    def tail(self, name: str, chars: int = 3000) -> str:
        path = self.var / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=30) as response:
            return json.loads(response.read())


SETUP_USER = """
from django.contrib.auth import get_user_model
User = get_user_model()
if not User.objects.filter(username={user!r}).exists():
    User.objects.create_user(username={user!r}, password={password!r})
"""

IMPORT_DEMO = """
from pathlib import Path
from leaderboard.services.problems import problems_import_path
print("demo: " + problems_import_path(path=Path({path!r}), problem_set="demo", demo=True).summary())
"""

EXPORT = r"""
import json, pathlib
from django.core import serializers
from django.apps import apps
MODELS = {{m.__name__: m for m in apps.get_models()}}  # wherever the apps keep them
LLM, Problem, Submission, Kernel = (MODELS[n] for n in ("LLM", "Problem", "Submission", "Kernel"))
AuditFlag, DistributionResult, Evaluation = (MODELS[n] for n in ("AuditFlag", "DistributionResult", "Evaluation"))
sub = Submission.objects.get(pk={submission})
llm = LLM.objects.get(pk=sub.llm_id)
llm.owner_id = None
llm.owner_group_id = None
llm.notes = {label!r}
sub.uploader_id = None
kernels = list(Kernel.objects.filter(submission=sub).order_by("pk"))
problems = list(Problem.objects.filter(pk__in={{k.problem_id for k in kernels}}).order_by("pk"))
evaluations = list(Evaluation.objects.filter(kernel__submission=sub).order_by("pk"))
for ev in evaluations:
    ev.task_id = ""
distributions = list(DistributionResult.objects.filter(evaluation__in=evaluations).order_by("pk"))
flags = list(AuditFlag.objects.filter(kernel__in=kernels).order_by("pk"))
for flag in flags:
    flag.reviewed_by_id = None
objects = [llm, *problems, sub, *kernels, *evaluations, *distributions, *flags]
pathlib.Path({path!r}).write_text(serializers.serialize("json", objects, indent=1))
print(json.dumps({{"objects": len(objects), "kernels": len(kernels), "evaluations": len(evaluations)}}))
"""
