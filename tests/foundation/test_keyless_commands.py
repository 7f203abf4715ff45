"""Without SECRET_KEY: the README's offline commands work in a newcomer's shell; servers and workers refuse to start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

DEMO = REPO_ROOT / "leaderboard" / "demo"
RELU = "leaderboard/demo/problems/level1/1_ReLU.py"
RELU_KERNEL = "leaderboard/demo/kernels/level_1_problem_1_sample_0_kernel.py"
RELU_HACK = "leaderboard/demo/kernels/level_1_problem_1_sample_1_kernel.py"


def keyless(argv: list[str], tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DJANGO_DEBUG", "DJANGO_SETTINGS_MODULE"}}
    env.update(VAR_DIR=str(tmp_path), PYTHONUNBUFFERED="1")
    return subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_readme_commands_run_without_a_secret_key(tmp_path):
    manage = [sys.executable, "manage.py"]
    assert keyless([*manage, "check"], tmp_path).returncode == 0
    audit = keyless([*manage, "audit_kernel", RELU_HACK, "--problem", RELU, "--json"], tmp_path)
    assert audit.returncode == 0, audit.stderr
    assert json.loads(audit.stdout)["static"]["flagged"] is True
    evaluated = keyless([*manage, "evaluate_kernel", RELU, RELU_KERNEL, "--device", "cpu", "--json"], tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["correct"] is True


def test_web_server_and_worker_still_need_a_secret_key(tmp_path):
    celery = str(Path(sys.executable).parent / "celery")
    for argv in (
        [sys.executable, "manage.py", "runserver", "127.0.0.1:1", "--noreload"],
        [sys.executable, "-c", "import config.wsgi"],
        [celery, "-A", "config", "worker", "-Q", "eval-cpu", "-c", "1"],
    ):
        done = keyless(argv, tmp_path, timeout=60)
        assert done.returncode != 0, argv
        assert "SECRET_KEY is required" in done.stderr, (argv, done.stderr[-500:])


def test_mypy_reads_the_settings_without_a_secret_key():
    """The django-stubs plugin imports config.settings inside mypy (make lint): a random key, as for the keyless
    commands; nothing else that merely looks like it."""
    from config.settings import type_checker

    for argv in (["/repo/.venv/bin/mypy"], ["dmypy", "run"], ["/x/site-packages/mypy/__main__.py"]):
        assert type_checker(argv), argv
    for argv in ([], ["-c"], ["/usr/bin/gunicorn"], ["manage.py", "runserver"], ["/srv/mypy-site/__main__.py"]):
        assert not type_checker(argv), argv
