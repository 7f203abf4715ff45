"""The Django side of the harness boundary: a private work directory, a scrubbed environment, a spawn of
`python -m evaluator.harness` in its own session, a hard timeout, and the result record read from a pipe.

Imports only the stdlib, `evaluator.harness.protocol` and `evaluator.orphans` (no Django, no torch), so Celery
workers stay CUDA-free.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from evaluator.harness.protocol import ENV_PASSTHROUGH, Options, Record, Spec, shorten, validate_result
from evaluator.harness.sandbox.confine import confine
from evaluator.harness.sandbox.confine import wanted as confine_wanted
from evaluator.harness.sandbox.disk import TMP_DISK, WORK_DISK, DiskCaps, mount_disks, private_mounts
from evaluator.harness.sandbox.namespaces import BWRAP_VAR, MODE_VAR, REQUIRE_VAR
from evaluator.harness.sandbox.privileges import ENV_VAR as SANDBOX_USER_VAR
from evaluator.orphans import (  # noqa: F401  (orphans_remove: also runner.orphans_remove for the worker at start)
    die_with_parent,
    kill_group,
    orphans_remove,
    remove_work,
    start_time,
    write_owner,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
GRACE_SECONDS = 30.0  # the harness enforces `timeout` itself; this is the backstop


class InfraError(Exception):
    """The evaluation could not run for reasons that are not the kernel's fault (retry it)."""


def _preexec(work: str | None, caps: DiskCaps | None, confined: bool) -> Any:
    """preexec_fn of the harness: die with the caller; as root, its disks (disk.py) and confinement (confine.py)."""

    def child() -> None:
        die_with_parent()
        if work is not None and caps is not None:
            private_mounts()
            mount_disks(work, caps)
        if confined:
            confine()

    return child


SANDBOX_VARS = (MODE_VAR, REQUIRE_VAR, BWRAP_VAR)  # namespaces.py: which sandbox, whether it is required, bwrap


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
    for name in (SANDBOX_USER_VAR, *SANDBOX_VARS):  # for the orchestrator only; workers never get them
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _timeout_record(timeout: float) -> dict[str, Any]:
    return Record(
        status="timeout",
        correct=False,
        standard_correct=False,
        error=f"the evaluation exceeded its {timeout:.0f} s limit; all its processes were killed",
    ).to_dict()


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
    prestart: bool = False,
    require_sandbox: bool = False,
) -> dict:
    """Evaluate one kernel against one problem in an isolated subprocess and return the result record.

    `env` may override allow-listed variables only (e.g. CUDA_VISIBLE_DEVICES to pin one evaluation to a GPU).
    `require_sandbox` makes a machine without the namespaces sandbox (harness/namespaces.py) an InfraError instead
    of an evaluation under weaker isolation.
    Compile errors, wrong answers, crashes and timeouts come back as records; InfraError is raised only when the
    harness itself could not run (cannot spawn, disk full, harness crash that is not the kernel's doing).

    With `prestart`, this process keeps one standby harness for the next call with the same settings: it is started
    as this evaluation begins, so its two workers (Python, torch, CUDA context) start while this one starts up and
    checks correctness, and the next call only hands it the problem and kernel. A standby never sees a kernel before
    its own call; one left over when the process exits is told to stop (it exits and takes its workers with it).
    """
    Options.build(options)  # reject unknown options here, in the caller's process
    config = _Config(
        device=device,
        timeout=float(timeout),
        work_root=Path(work_root) if work_root else Path(tempfile.gettempdir()) / "kbv-work",
        compile_cache_dir=str(compile_cache_dir or ""),
        python=python or sys.executable,
        options=dict(options or {}),
        env={k: v for k, v in (env or {}).items() if k in ENV_PASSTHROUGH}
        | ({REQUIRE_VAR: "True"} if require_sandbox else {}),  # fail rather than run a kernel unsandboxed
    )
    harness = _take_standby(config) if prestart else None
    try:
        if prestart:  # the next one starts now, so its start-up overlaps this one's start, not its timing
            _park_standby(config)
        if harness is not None:
            try:
                harness.write_sources(problem_source, kernel_source)
                harness.go()
            except OSError:  # it ended while parked: start afresh
                harness.discard()
                harness = None
        if harness is None:
            harness = _Harness(config)
            harness.write_sources(problem_source, kernel_source)
            harness.spawn(standby=False)
        return harness.collect()
    except OSError as exc:
        raise InfraError(f"cannot prepare or run the harness: {exc}") from exc
    finally:
        if harness is not None:
            harness.cleanup(keep=bool(config.options.get("keep_workdir")))


@dataclass(frozen=True)
class _Config:
    """Everything about an evaluation except the problem and the kernel: what a standby must match."""

    device: str
    timeout: float
    work_root: Path
    compile_cache_dir: str
    python: str
    options: dict
    env: dict

    def key(self) -> str:
        return json.dumps(astuple(self), sort_keys=True, default=str)  # every field, in order (Path as str)


class _Harness:
    """One `python -m evaluator.harness` process in its own session, with its private work directory."""

    def __init__(self, config: _Config) -> None:
        self.config = config
        self.work = config.work_root / f"eval-{uuid.uuid4().hex[:16]}"
        try:
            self._create(config)
        except OSError:
            remove_work(self.work)
            raise
        self.proc: subprocess.Popen | None = None
        self.read_fd = -1
        self.go_fd = -1

    def _create(self, config: _Config) -> None:
        (self.work / "harness").mkdir(parents=True)
        os.chmod(self.work / "harness", 0o700)  # spec and log: not for the kernel (it may be another user)
        for disk in (WORK_DISK, TMP_DISK):  # the kernel's disks' mount points
            (self.work / disk).mkdir()
        self.problem = self.work / "harness" / "problem.py"
        self.kernel = self.work / "harness" / "kernel.py"
        self.log_path = self.work / "harness" / "harness.log"
        self.spec = Spec(
            problem_path=str(self.problem),
            kernel_path=str(self.kernel),
            device=config.device,
            timeout=config.timeout,
            work_dir=str(self.work),
            compile_cache_dir=config.compile_cache_dir,
            python=config.python,
            options=config.options,
        )
        self.spec_path = self.work / "harness" / "spec.json"
        self.spec_path.write_text(self.spec.to_json())
        write_owner(self.work)

    def write_sources(self, problem_source: str, kernel_source: str) -> None:
        self.problem.write_text(problem_source)
        self.kernel.write_text(kernel_source)

    def spawn(self, *, standby: bool) -> None:
        read_fd, write_fd = os.pipe()
        fds = [write_fd]
        command = [self.spec.python, "-m", "evaluator.harness", "--spec", str(self.spec_path)]
        command += ["--channel-fd", str(write_fd)]
        if standby:
            go_r, self.go_fd = os.pipe()
            fds.append(go_r)
            command += ["--go-fd", str(go_r)]
        confined, opts = confine_wanted(), Options.build(self.config.options)
        caps = DiskCaps(opts.work_dir_mb << 20, opts.work_dir_files, opts.tmp_mb << 20, opts.tmp_files)
        try:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(  # our own harness module
                    command,
                    cwd=self.work / "harness",
                    env=_harness_env(self.work / "harness") | self.config.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    pass_fds=tuple(fds),
                    start_new_session=True,
                    # system calls only: safe after fork (sandbox/confine.py, sandbox/disk.py)
                    preexec_fn=_preexec(str(self.work) if os.geteuid() == 0 else None, caps, confined),
                )
        except subprocess.SubprocessError as exc:  # the confinement failed in the child: never run unconfined
            raise OSError(f"cannot start the harness confined ({exc}); KBV_CONFINE=off runs it unconfined") from exc
        finally:
            for fd in fds:
                os.close(fd)
        self.read_fd = read_fd
        with contextlib.suppress(OSError):
            write_owner(self.work, pgid=self.proc.pid, pgid_start=start_time(self.proc.pid))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def go(self) -> None:
        os.write(self.go_fd, b"go\n")
        os.close(self.go_fd)
        self.go_fd = -1

    def collect(self) -> dict:
        """Read events until the harness ends or overruns; return its record (see run_evaluation)."""
        assert self.proc is not None
        spec, proc, read_fd = self.spec, self.proc, self.read_fd
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
                    if (pid := _worker_pid(event)) is not None:
                        worker_pids.append(pid)
                    if event.get("event") == "gpu_wait" and isinstance(event.get("seconds"), int | float):
                        deadline += max(0.0, float(event["seconds"]))  # queued behind other evaluations' timing
        finally:
            os.close(read_fd)
            self.read_fd = -1
            kill_group(proc.pid)
            for pid in worker_pids:  # workers lead their own sessions: kill each group too
                kill_group(pid)
            try:
                code: int | None = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
        if timed_out:
            return _timeout_record(spec.timeout)
        return _record_from(events, code, self.log_path)

    def discard(self) -> None:
        """A standby that will not be used: end of file on its go pipe makes it stop its workers and exit."""
        if self.go_fd >= 0:
            os.close(self.go_fd)
            self.go_fd = -1
        if self.proc is not None:
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                kill_group(self.proc.pid)
                self.proc.wait(timeout=10)
        if self.read_fd >= 0:
            os.set_blocking(self.read_fd, False)
            with contextlib.suppress(OSError):  # the workers' pids, in case the harness did not end them
                for line in os.read(self.read_fd, 1 << 20).splitlines():
                    with contextlib.suppress(ValueError):
                        if (pid := _worker_pid(json.loads(line))) is not None:
                            kill_group(pid)
            os.close(self.read_fd)
            self.read_fd = -1
        self.cleanup(keep=False)

    def cleanup(self, *, keep: bool) -> None:
        if not keep:
            remove_work(self.work)


def _worker_pid(event: Any) -> int | None:
    """The pid a harness "worker" event announces (workers lead their own sessions: their groups are killed too)."""
    ok = isinstance(event, dict) and event.get("event") == "worker" and isinstance(event.get("pid"), int)
    return event["pid"] if ok else None


def _record_from(events: list[dict[str, Any]], code: int | None, log_path: Path) -> dict:
    for event in events:
        if event.get("event") == "result":
            record = event.get("record")
            try:
                validate_result(record)
            except ValueError as exc:
                raise InfraError(f"harness produced an invalid record: {exc}") from exc
            return record  # type: ignore[return-value]  # a dict: validated just above
        if event.get("event") == "infra_error":
            raise InfraError(str(event.get("message", "harness infrastructure error")))
    tail = shorten(log_path.read_text(errors="replace"), 800) if log_path.exists() else ""
    if any(e.get("role") == "candidate" for e in events if e.get("event") == "worker"):
        # The harness died while candidate code was running: treat it as the kernel's doing, not a retryable fault.
        return Record(
            status="runtime_error",
            correct=False,
            standard_correct=False,
            error=shorten(
                f"the harness process ended (code {code}) without a verdict while the kernel was running", 600
            ),
        ).to_dict()
    raise InfraError(f"harness exited with code {code} before starting the kernel: {tail}")


# At most one standby per calling thread (a Celery pool process has one; a benchmark may run one per GPU slot).
_standby: dict[int, tuple[str, _Harness]] = {}
_standby_lock = threading.Lock()


def _take_standby(config: _Config) -> _Harness | None:
    with _standby_lock:
        parked = _standby.pop(threading.get_ident(), None)
    if parked is None:
        return None
    key, harness = parked
    if key != config.key() or not harness.alive():  # other settings, or it failed on its own (infrastructure)
        harness.discard()
        return None
    return harness


def _park_standby(config: _Config) -> None:
    """Start the calling thread's next harness now. Only an optimisation: a failure here costs nothing else."""
    try:
        harness = _Harness(config)
    except OSError:
        return
    try:
        harness.spawn(standby=True)
    except OSError:
        harness.cleanup(keep=False)
        return
    with _standby_lock:
        old = _standby.pop(threading.get_ident(), None)
        _standby[threading.get_ident()] = (config.key(), harness)
    if old is not None:
        old[1].discard()


def discard_standby() -> None:
    """Stop every standby harness of this process (also run at exit)."""
    with _standby_lock:
        parked = list(_standby.values())
        _standby.clear()
    for _, harness in parked:
        harness.discard()


atexit.register(discard_standby)
