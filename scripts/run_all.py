"""Serve the site and run one Celery worker beside it, on the embedded defaults (used by `make run`).

Both processes share VAR_DIR (SQLite database and the filesystem broker). This script supervises them: a process
that exits (a worker killed by the kernel's OOM killer, a crash) is restarted with a backoff (1 s, doubling up to
60 s, back to 1 s after a minute of good health) while the other keeps running, so the site keeps serving. Each
runs in its own process group, so stopping or restarting one also ends its children (Celery's pool processes).

Ctrl-C, SIGTERM or SIGHUP (the terminal closed) stops everything: each child's own process is asked to stop (the
worker's warm shutdown ends its pool itself, so its log shows no pool process killed by a signal), and whatever is
left of its group after the grace period is killed. Since the children run in groups of their own, a signal to
make's process group reaches only this script; if it dies without stopping them (SIGKILL), the kernel sends each
child SIGTERM (Linux's parent-death signal), so nothing outlives `make run`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BACKOFF_MAX = 60.0
HEALTHY_AFTER = 60.0  # seconds of uptime after which a restart starts again from the shortest backoff
STOP_GRACE = 20.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """Run in the child before exec: the kernel sends it SIGTERM when this script dies, however it dies (SIGKILL
    to make's process group included). None off Linux, where children are stopped only by this script."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the script died before the line above: no signal would come
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


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
        self.proc = subprocess.Popen(
            self.argv, cwd=ROOT, start_new_session=True, preexec_fn=_die_with_parent(os.getpid())
        )
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
        """Ask the child's own process to stop; it ends its children itself (a signal to the whole group would
        reach Celery's pool processes before the worker's warm shutdown does, and the worker logs that as an
        ERROR). wait() kills what is left of the group."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signum)

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


_stopping = False


def _raise_stop(signum: int, frame: object) -> None:
    """Once: make passes its own SIGTERM on to this script, which then gets two at once, and a second _Stop raised
    inside the stopping code would leave the children running."""
    global _stopping
    if _stopping:
        return
    _stopping = True
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
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _raise_stop)
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
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        for child in procs:
            child.send(child.stop_signal)
        deadline = time.monotonic() + STOP_GRACE
        for child in procs:
            child.wait(deadline)
        print("run_all: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
