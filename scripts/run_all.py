"""Serve the site and run one Celery worker beside it, on the embedded defaults (used by `make run`).

Both processes share VAR_DIR (SQLite database and the filesystem broker). This script supervises them: a process
that exits (a worker killed by the kernel's OOM killer, a crash) is restarted with a backoff (1 s, doubling up to
60 s, back to 1 s after a minute of good health) while the other keeps running, so the site keeps serving. Each
runs in its own process group, so stopping or restarting one also ends its children (Celery's pool processes).
Ctrl-C or SIGTERM stops everything.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BACKOFF_MAX = 60.0
HEALTHY_AFTER = 60.0  # seconds of uptime after which a restart starts again from the shortest backoff
STOP_GRACE = 20.0


@dataclass
class Child:
    """One supervised command: started in its own session, restarted after it exits."""

    name: str
    argv: list[str]
    stop_signal: int
    proc: subprocess.Popen | None = None
    started: float = 0.0
    backoff: float = 1.0
    restart_at: float | None = None
    restarts: int = field(default=0)

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, start_new_session=True)
        self.started, self.restart_at = time.monotonic(), None
        print(f"run_all: {self.name} started (pid {self.proc.pid})", flush=True)

    def check(self) -> None:
        """Notice an exit and schedule the restart; restart when its time has come."""
        now = time.monotonic()
        if self.proc is not None and self.proc.poll() is not None:
            code = self.proc.returncode
            _kill_group(self.proc.pid, signal.SIGKILL)  # its children (pool processes) must not outlive it
            self.proc = None
            if now - self.started >= HEALTHY_AFTER:
                self.backoff = 1.0
            self.restart_at = now + self.backoff
            print(f"run_all: {self.name} exited (code {code}); restarting in {self.backoff:.0f} s", flush=True)
            self.backoff = min(BACKOFF_MAX, self.backoff * 2)
        if self.proc is None and self.restart_at is not None and now >= self.restart_at:
            self.restarts += 1
            self.start()

    def send(self, signum: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc.pid, signum)

    def wait(self, deadline: float) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        _kill_group(self.proc.pid, signal.SIGKILL)  # whatever is left of the group (the leader may be gone)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def _kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def children() -> list[Child]:
    host, port = os.getenv("HOST", "127.0.0.1"), os.getenv("PORT", "8000")
    hardware = os.getenv("EVALUATOR_DEFAULT_HARDWARE", "cpu")
    var_dir = Path(os.getenv("VAR_DIR", ROOT / "var"))
    worker = [
        str(BIN / "celery"),
        "-A",
        "config",
        "worker",
        "-Q",
        f"eval-{hardware},eval-{hardware}-rerun,default",  # uploads, the site's re-runs (below them), the rest
        "-c",
        "1",
        "--prefetch-multiplier",
        "1",
        "-l",
        "INFO",
        "-n",
        f"{hardware}@%h",
        "--beat",  # the reaper's schedule (CELERY_BEAT_SCHEDULE); one beat per deployment
        "--schedule",
        str(var_dir / "celerybeat-schedule"),
    ]
    web = [sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload"]
    return [Child("web", web, signal.SIGINT), Child("worker", worker, signal.SIGTERM)]


def main() -> int:
    procs = children()
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    try:
        for child in procs:
            child.start()
        host, port = os.getenv("HOST", "127.0.0.1"), os.getenv("PORT", "8000")
        print(f"KernelBench-Verified at http://{host}:{port}/ (worker beside it); Ctrl-C to stop.", flush=True)
        while True:
            for child in procs:
                child.check()
            time.sleep(0.5)
    except (_Stop, KeyboardInterrupt):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for child in procs:
            child.send(child.stop_signal)
        deadline = time.monotonic() + STOP_GRACE
        for child in procs:
            child.wait(deadline)
        print("run_all: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
