"""Shared by the steps of scripts/gpu_e2e.py: the repository's paths, the log line, a port, times, a checked run."""

from __future__ import annotations

import datetime as dt
import shlex
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
PROBLEMS_JSONL = REPO / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"
DEMO_DIR = REPO / "leaderboard" / "demo"
KERNELS_DIR = REPO / "benchmarks" / "kernels"
BENCH_RESULTS = REPO / "benchmarks" / "results" / "bundle-h200"
OUT_FILES = ("gpu_e2e.json", "gpu_e2e.md", "gpu_e2e_logs.txt")


def log(msg: str) -> None:
    print(f"[gpu_e2e {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse_time(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kw)
    if done.returncode:
        raise RuntimeError(f"{shlex.join(map(str, argv))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done
