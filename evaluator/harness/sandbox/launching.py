"""Starting an evaluation under its launcher, from the caller's side (evaluator/runner.py, the harness's command
line). stdlib only, no privilege: the caller hands its descriptors over and keeps a life socket.

The caller sends one START (launcher/wire.py) to the zygote: the evaluation's folder, interpreter and limits, and
its descriptors (the event channel the orchestrator writes, the orchestrator's log, the life socket, a standby's go
pipe). The zygote forks the evaluation's launcher, which answers STARTED (or FAILED, with why) on the life socket,
and EXITED with the orchestrator's exit code once everything of the evaluation is gone. Closing the life socket
(or dying) ends the evaluation: the launcher kills all of it. The zygote is inherited (`KBV_ZYGOTE_FD`: a Celery
worker started as root starts it before dropping to its service user, evaluator/service_user.py) or started here,
once per process, as whoever this process is.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.harness.environ import ENV_PASSTHROUGH, REPO_ROOT
from evaluator.harness.protocol import Options
from evaluator.harness.sandbox.launcher import wire

ZYGOTE_VAR = "KBV_ZYGOTE_FD"
STARTUP_S = 180.0  # the launcher probes the sandbox and both users' interpreters before it answers

_lock = threading.Lock()
_zygote: socket.socket | None = None


class LaunchFailed(OSError):
    """The launcher could not set the evaluation up (its reason): an infrastructure error, never the kernel's."""


def start_zygote() -> socket.socket:
    """A zygote of this process's own (`python -m evaluator.harness.sandbox.launcher`), as this process's user; it
    ends when every copy of the returned socket is closed."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for end in (ours, theirs):  # the kernel attaches our uid to every message, even one sent before it listens
        end.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    with theirs:
        subprocess.run(  # it forks the zygote and returns at once
            [sys.executable, "-m", "evaluator.harness.sandbox.launcher", "--listen", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            cwd="/",
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            timeout=60,
        )
    return ours


def zygote(*, fresh: bool = False) -> socket.socket:
    """The zygote's socket: inherited, else started now (again when `fresh`: the one we started has ended; an
    inherited one is never replaced by one of ours, which would hold no privilege)."""
    global _zygote
    inherited = os.environ.get(ZYGOTE_VAR, "")
    with _lock:
        if inherited.isdigit():
            if fresh:
                raise LaunchFailed(f"the launcher's zygote ({ZYGOTE_VAR}) has ended: restart this worker")
            if _zygote is None:
                _zygote = socket.socket(fileno=int(inherited))
                _zygote.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        elif _zygote is None or fresh:
            if _zygote is not None:
                _zygote.close()
            _zygote = start_zygote()
        return _zygote


@dataclass(frozen=True)
class Request:
    """What the launcher needs of one evaluation; the sandbox settings come from this process's environment
    (KBV_SANDBOX, KBV_REQUIRE_SANDBOX, KBV_BWRAP, KBV_SANDBOX_USER, KBV_CONFINE) at the time of the call."""

    work: str
    python: str
    cuda: bool
    limits: dict[str, int]  # wire.LIMITS: memory (0: half the machine), fsize, cpu_seconds, the disks' caps
    cache: str = ""
    gpu_locks: str = ""
    profile: str = ""  # where the orchestrator writes profiler traces (the option profile_dir)
    require: bool = False
    keep: bool = False
    env: dict[str, str] = field(default_factory=dict)  # allow-listed overrides (CUDA_VISIBLE_DEVICES, ...)

    def fields(self, standby: bool) -> dict[str, object]:
        env = {key: os.environ[key] for key in ENV_PASSTHROUGH if key in os.environ}
        env.update({k: v for k, v in self.env.items() if k in ENV_PASSTHROUGH})
        get = os.environ.get
        return {
            "work": self.work,
            "python": self.python,
            "cache": self.cache,
            "gpu_locks": self.gpu_locks,
            "profile": self.profile,
            "bwrap": get("KBV_BWRAP", "").strip(),
            "user": get("KBV_SANDBOX_USER", "auto").strip() or "auto",
            "mode": get("KBV_SANDBOX", "auto").strip() or "auto",
            "env": "\0".join(f"{k}={v}" for k, v in env.items()),
            "cuda": int(self.cuda),
            "require": int(self.require or get("KBV_REQUIRE_SANDBOX", "False").strip().lower() == "true"),
            "confine": int(get("KBV_CONFINE", "on").strip().lower() != "off"),
            "standby": int(standby),
            "keep": int(self.keep),
            **self.limits,
        }


def limits(opts: Options, timeout: float) -> dict[str, int]:
    """The limits a START carries (wire.LIMITS), from an evaluation's options."""
    return {
        "memory": opts.host_memory_mb << 20,  # 0: the launcher takes half the machine
        "fsize": opts.file_size_mb << 20,
        "cpu_seconds": int(timeout) + 60,
        "work_bytes": opts.work_dir_mb << 20,
        "work_files": opts.work_dir_files,
        "tmp_bytes": opts.tmp_mb << 20,
        "tmp_files": opts.tmp_files,
    }


class Launched:
    """An evaluation under its launcher, as its caller holds it: the life socket."""

    def __init__(self, life: socket.socket, pid: int) -> None:
        self.life = life
        self.pid = pid  # the launcher's (it leads its own session)
        self.code: int | None = None
        self.done = False

    def ended(self) -> bool:
        """Whether the launcher has reported the end of everything (without waiting)."""
        if not self.done and select.select([self.life], [], [], 0)[0]:
            self._read()
        return self.done

    def _read(self) -> None:
        try:
            message = wire.receive(self.life, ["EXITED"])
            self.code = message["status"] if message is not None else None
        except (OSError, wire.Malformed):
            self.code = None
        self.done = True

    def finish(self, *, abort: bool, timeout: float = 60.0) -> int | None:
        """Wait for the end (after asking for it with `abort`): the orchestrator's exit code, None if unknown."""
        if not self.done:
            if abort:
                with contextlib.suppress(OSError):
                    self.life.shutdown(socket.SHUT_WR)
            if select.select([self.life], [], [], timeout)[0]:
                self._read()
            else:  # the launcher is stuck: drop our end, which it also reads as the end
                self.done = True
        self.life.close()
        return self.code


def launch(request: Request, *, channel: int, log: int, go: int | None = None) -> Launched:
    """Start the evaluation (see the module): the caller keeps its own copies of the descriptors and closes them."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with theirs:
        fds = [channel, log, theirs.fileno(), *([go] if go is not None else [])]
        values = request.fields(standby=go is not None)
        try:
            wire.send(zygote(), "START", fds, **values)
        except OSError:  # the zygote we started has ended: once more with a fresh one
            wire.send(zygote(fresh=True), "START", fds, **values)
    ours.settimeout(STARTUP_S)
    try:
        message = wire.receive(ours, ["STARTED", "FAILED"])
    except (OSError, wire.Malformed) as exc:
        ours.close()
        raise LaunchFailed(f"the launcher did not answer: {exc}") from exc
    ours.settimeout(None)
    if message is None or message.kind == "FAILED":
        ours.close()
        raise LaunchFailed(message["reason"] if message else "the launcher refused the evaluation")
    return Launched(ours, message["pid"])


def run_to_end(request: Request, log: Path, *, timeout: float) -> list[dict[str, Any]]:
    """Launch (no standby) and read the orchestrator's events until it ends or `timeout` passes (then the launcher
    ends it): the harness's command line. The runner reads its events itself (standbys, the GPU queue's time)."""
    read_fd, write_fd = os.pipe()
    try:
        with open(log, "wb") as fh:
            launched = launch(request, channel=write_fd, log=fh.fileno())
    finally:
        os.close(write_fd)
    data, deadline = b"", time.monotonic() + timeout
    with os.fdopen(read_fd, "rb", buffering=0) as channel:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([channel], [], [], min(left, 1.0))[0]:
                continue
            if not (chunk := channel.read(1 << 20)):
                break
            data += chunk
        launched.finish(abort=deadline <= time.monotonic())
    events = []
    for line in data.splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict):
                events.append(event)
    return events
