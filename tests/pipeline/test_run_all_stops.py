"""How `make run` stops (scripts/run_all.py under a shell, as make runs its recipe): a normal stop logs no ERROR
(the worker's pool is ended by its own warm shutdown, not by a signal to its process group), and killing the
whole process group, SIGKILL included, stops the web server and the worker, which run in sessions of their own."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pipeline.helpers import REPO_ROOT
from tests.pipeline.stack import free_port

pytestmark = pytest.mark.slow


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _in_group(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid and _alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                pass
    return found


def _wait(what: str, check, timeout: float, log: Path) -> object:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{log.read_text(errors='replace')}"
        time.sleep(0.3)
    return value


class MakeRun:
    """`make run`'s last step: a shell (standing in for make) runs run_all.py; both in one new process group."""

    def __init__(self, tmp_path: Path) -> None:
        self.log = tmp_path / "make-run.log"
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
        env.update(VAR_DIR=str(tmp_path / "var"), PORT=str(free_port()), DJANGO_DEBUG="True", PYTHONUNBUFFERED="1")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=REPO_ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        with open(self.log, "wb") as out:
            self.make = subprocess.Popen(
                ["bash", "-c", f"{sys.executable} scripts/run_all.py; echo make: run_all exited $?"],
                cwd=REPO_ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def children(self) -> dict[str, int]:
        return {n: int(p) for n, p in re.findall(r"run_all: (\w+) started \(pid (\d+)\)", self.log.read_text())}

    def ready(self) -> dict[str, int]:
        """The web server's and the worker's pids once the worker is ready (its pool forked)."""
        _wait("the worker", lambda: " ready." in self.log.read_text(errors="replace"), 120, self.log)
        return _wait("both children", lambda: len(self.children()) == 2 and self.children(), 10, self.log)

    def cleanup(self) -> None:
        for pgid in [self.make.pid, *self.children().values()]:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def make_run(tmp_path: Path) -> Iterator[MakeRun]:
    run = MakeRun(tmp_path)
    try:
        yield run
    finally:
        run.cleanup()


def test_a_normal_stop_logs_no_error(make_run):
    children = make_run.ready()
    os.killpg(make_run.make.pid, signal.SIGTERM)  # as `kill -- -PGID`, or make passing its SIGTERM on
    make_run.make.wait(timeout=60)
    _wait("the children to stop", lambda: not any(_alive(p) for p in children.values()), 30, make_run.log)
    # run_all says "stopped" only after it has reaped both children: a moment after they are gone
    _wait("run_all to stop", lambda: "run_all: stopped" in make_run.log.read_text(errors="replace"), 30, make_run.log)
    text = make_run.log.read_text(errors="replace")
    assert "Warm shutdown" in text
    assert "ERROR" not in text, text


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP])
def test_killing_makes_process_group_stops_the_web_server_and_the_worker(make_run, signum):
    children = make_run.ready()
    os.killpg(make_run.make.pid, signum)
    make_run.make.wait(timeout=30)
    _wait(
        "the web server and the worker to stop", lambda: not any(_alive(p) for p in children.values()), 60, make_run.log
    )
    _wait("their process groups to empty", lambda: not any(_in_group(p) for p in children.values()), 30, make_run.log)
