"""The Django side of the harness boundary: a private work directory, a scrubbed environment, a spawn of
`python -m evaluator.harness` in its own session, a hard timeout, and the result record read from a pipe.

Imports only the stdlib and `evaluator.harness.protocol` (no Django, no torch), so Celery workers stay CUDA-free.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from evaluator.harness.privileges import ENV_VAR as SANDBOX_USER_VAR
from evaluator.harness.protocol import ENV_PASSTHROUGH, Options, Spec, empty_result, shorten, validate_result

REPO_ROOT = Path(__file__).resolve().parent.parent
GRACE_SECONDS = 30.0  # the harness enforces `timeout` itself; this is the backstop


class InfraError(Exception):
    """The evaluation could not run for reasons that are not the kernel's fault (retry it)."""


def _harness_env(home: Path) -> dict[str, str]:
    """Built from scratch: never SECRET_KEY, DATABASE_URL, CELERY_BROKER_URL or DJANGO_SETTINGS_MODULE."""
    env = {key: os.environ[key] for key in ENV_PASSTHROUGH if key in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        HOME=str(home),
        PYTHONPATH=str(REPO_ROOT),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONNOUSERSITE="1",
    )
    if SANDBOX_USER_VAR in os.environ:  # for the orchestrator only (privileges.py); workers never get it
        env[SANDBOX_USER_VAR] = os.environ[SANDBOX_USER_VAR]
    return env


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _timeout_record(timeout: float) -> dict[str, Any]:
    record = empty_result()
    record.update(
        status="timeout",
        correct=False,
        standard_correct=False,
        error=f"the evaluation exceeded its {timeout:.0f} s limit; all its processes were killed",
    )
    return record


def run_evaluation(
    *,
    problem_source: str,
    kernel_source: str,
    device: str = "cpu",
    timeout: float = 900,
    work_root: Path | None = None,
    compile_cache_dir: Path | None = None,
    python: str | None = None,
    options: dict | None = None,
    env: dict[str, str] | None = None,
) -> dict:
    """Evaluate one kernel against one problem in an isolated subprocess and return the result record.

    `env` may override allow-listed variables only (e.g. CUDA_VISIBLE_DEVICES to pin one evaluation to a GPU).
    Compile errors, wrong answers, crashes and timeouts come back as records; InfraError is raised only when the
    harness itself could not run (cannot spawn, disk full, harness crash that is not the kernel's doing).
    """
    Options.build(options)  # reject unknown options here, in the caller's process
    root = Path(work_root) if work_root else Path(tempfile.gettempdir()) / "kbv-work"
    work = root / f"eval-{uuid.uuid4().hex[:16]}"
    keep = bool((options or {}).get("keep_workdir"))
    try:
        (work / "harness").mkdir(parents=True)
        os.chmod(work / "harness", 0o700)  # spec and log: not for the kernel (it may be another user)
        problem = work / "harness" / "problem.py"
        kernel = work / "harness" / "kernel.py"
        problem.write_text(problem_source)
        kernel.write_text(kernel_source)
        spec = Spec(
            problem_path=str(problem),
            kernel_path=str(kernel),
            device=device,
            timeout=float(timeout),
            work_dir=str(work),
            compile_cache_dir=str(compile_cache_dir or ""),
            python=python or sys.executable,
            options=dict(options or {}),
        )
        spec_path = work / "harness" / "spec.json"
        spec_path.write_text(spec.to_json())
        return _spawn(spec, spec_path, work, env or {})
    except OSError as exc:
        raise InfraError(f"cannot prepare or run the harness: {exc}") from exc
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _spawn(spec: Spec, spec_path: Path, work: Path, env: dict[str, str]) -> dict:
    read_fd, write_fd = os.pipe()
    log_path = work / "harness" / "harness.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [spec.python, "-m", "evaluator.harness", "--spec", str(spec_path), "--channel-fd", str(write_fd)],
            cwd=work / "harness",
            env=_harness_env(work / "harness") | {k: v for k, v in env.items() if k in ENV_PASSTHROUGH},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(write_fd,),
            start_new_session=True,
        )
    os.close(write_fd)
    worker_pids: list[int] = []
    events: list[dict[str, Any]] = []
    buffer = b""
    deadline = time.monotonic() + spec.timeout + GRACE_SECONDS
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                events.append(event)
                if event.get("event") == "worker" and isinstance(event.get("pid"), int):
                    worker_pids.append(event["pid"])
                if event.get("event") == "gpu_wait" and isinstance(event.get("seconds"), int | float):
                    deadline += max(0.0, float(event["seconds"]))  # queued behind other evaluations' timing
    finally:
        os.close(read_fd)
        _kill_group(proc.pid)
        for pid in worker_pids:  # workers lead their own sessions: kill each group too
            _kill_group(pid)
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
    if timed_out:
        return _timeout_record(spec.timeout)
    for event in events:
        if event.get("event") == "result":
            record = event.get("record")
            try:
                validate_result(record)
            except ValueError as exc:
                raise InfraError(f"harness produced an invalid record: {exc}") from exc
            return record
        if event.get("event") == "infra_error":
            raise InfraError(str(event.get("message", "harness infrastructure error")))
    tail = shorten(log_path.read_text(errors="replace"), 800) if log_path.exists() else ""
    if any(e.get("role") == "candidate" for e in events if e.get("event") == "worker"):
        # The harness died while candidate code was running: treat it as the kernel's doing, not a retryable fault.
        record = empty_result()
        record.update(
            status="runtime_error",
            correct=False,
            standard_correct=False,
            error=shorten(
                f"the harness process ended (code {code}) without a verdict while the kernel was running", 600
            ),
        )
        return record
    raise InfraError(f"harness exited with code {code} before starting the kernel: {tail}")
