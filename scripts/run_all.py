"""Serve the site and run one Celery worker beside it, on the embedded defaults (used by `make run`).

Both processes share var/ (SQLite database and the filesystem broker). Ctrl-C stops both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def main() -> int:
    host, port = os.getenv("HOST", "127.0.0.1"), os.getenv("PORT", "8000")
    hardware = os.getenv("EVALUATOR_DEFAULT_HARDWARE", "cpu")
    worker = subprocess.Popen(
        [
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            "-Q",
            f"eval-{hardware},default",
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
            str(ROOT / "var" / "celerybeat-schedule"),
        ],
        cwd=ROOT,
    )
    web = subprocess.Popen([sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload"], cwd=ROOT)
    print(f"KernelBench-Verified at http://{host}:{port}/ (worker on queue eval-{hardware}); Ctrl-C to stop.")
    procs = [web, worker]
    try:
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT if p is web else signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    return max((p.returncode or 0) for p in procs)


if __name__ == "__main__":
    sys.exit(main())
