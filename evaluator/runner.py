"""The Django side of the harness boundary: a private work directory, the evaluation started under its launcher
(evaluator/harness/sandbox/launching.py: the privileged launcher starts `python -m evaluator.harness`, the
orchestrator, as a uid of its own), a hard timeout, and the result record read from a pipe.

Imports only the stdlib, `evaluator.harness.protocol`, the harness's launching module and `evaluator.orphans` (no
Django, no torch), so Celery workers stay CUDA-free and this process never needs a privilege of its own.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from evaluator.harness.protocol import ENV_PASSTHROUGH, Options, Record, Spec, shorten, validate_result
from evaluator.harness.sandbox.disk import TMP_DISK, WORK_DISK
from evaluator.harness.sandbox.launching import Launched, Request, launch, limits
from evaluator.harness.sandbox.namespaces import REQUIRE_VAR
from evaluator.orphans import (  # noqa: F401  (orphans_remove: also runner.orphans_remove for the worker at start)
    orphans_remove,
    remove_work,
    start_time,
    write_owner,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
GRACE_SECONDS = 30.0  # the harness enforces `timeout` itself; this is the backstop
# The longest wait for GPU memory the backstop leaves out: the harness gives up waiting an hour past its own deadline
# (gpu_holds.py: an infrastructure error, retried), so a wait reported longer than that is not believed.
MAX_MEMORY_WAIT_S = 3600.0 + GRACE_SECONDS


class InfraError(Exception):
    """The evaluation could not run for reasons that are not the kernel's fault (retry it)."""


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
    The `seeds` option (the master seed the site published a digest of) is this call's alone: a standby is started
    without it and receives it with its "go" line, so it serves the next call whatever that call's seeds are.
    """
    Options.build(options)  # reject unknown options here, in the caller's process
    options = dict(options or {})
    master = str(options.pop("seeds", "") or "")
    config = _Config(
        device=device,
        timeout=float(timeout),
        work_root=Path(work_root) if work_root else Path(tempfile.gettempdir()) / "kbv-work",
        compile_cache_dir=str(compile_cache_dir or ""),
        python=python or sys.executable,
        options=options,
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
                harness.go(master)
            except OSError:  # it ended while parked: start afresh
                harness.discard()
                harness = None
        if harness is None:
            harness = _Harness(config, master=master)
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
    """One evaluation under its launcher (the orchestrator, `python -m evaluator.harness`, and its workers), with its
    private work directory."""

    def __init__(self, config: _Config, *, master: str = "") -> None:
        self.config = config
        self.work = config.work_root / f"eval-{uuid.uuid4().hex[:16]}"
        try:
            self._create(config, master)
        except OSError:
            remove_work(self.work)
            raise
        self.launched: Launched | None = None
        self.read_fd = -1
        self.go_fd = -1

    def _create(self, config: _Config, master: str) -> None:
        (self.work / "harness").mkdir(parents=True)
        os.chmod(self.work / "harness", 0o700)  # spec and log: the launcher shares them with the orchestrator alone
        for disk in (WORK_DISK, TMP_DISK):  # the kernel's disks' mount points (sandbox/disk.py)
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
            options=config.options | ({"seeds": master} if master else {}),
        )
        self.spec_path = self.work / "harness" / "spec.json"
        _write(self.spec_path, self.spec.to_json())
        write_owner(self.work)

    def write_sources(self, problem_source: str, kernel_source: str) -> None:
        _write(self.problem, problem_source)
        _write(self.kernel, kernel_source)

    def _request(self) -> Request:
        config, opts = self.config, Options.build(self.config.options)
        for folder in (config.compile_cache_dir, opts.gpu_lock_dir, opts.profile_dir):  # the launcher shares them
            if folder:  # with the orchestrators' group
                os.makedirs(folder, exist_ok=True)
        return Request(
            work=str(self.work.absolute()),
            python=config.python,
            cuda=config.device.startswith("cuda"),
            limits=limits(opts, config.timeout),
            cache=str(Path(config.compile_cache_dir).absolute()) if config.compile_cache_dir else "",
            gpu_locks=str(Path(opts.gpu_lock_dir).absolute()) if opts.gpu_lock_dir else "",
            profile=str(Path(opts.profile_dir).absolute()) if opts.profile_dir else "",
            require=config.env.get(REQUIRE_VAR) == "True",
            keep=opts.keep_workdir,
            env=config.env,
        )

    def spawn(self, *, standby: bool) -> None:
        read_fd, write_fd = os.pipe()
        go_r = -1
        if standby:
            go_r, self.go_fd = os.pipe()
        try:
            with open(self.log_path, "wb") as log:
                go = go_r if standby else None
                self.launched = launch(self._request(), channel=write_fd, log=log.fileno(), go=go)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            for fd in (write_fd, go_r):
                if fd >= 0:
                    os.close(fd)
        self.read_fd = read_fd
        with contextlib.suppress(OSError):
            write_owner(self.work, pgid=self.launched.pid, pgid_start=start_time(self.launched.pid))

    def alive(self) -> bool:
        return self.launched is not None and not self.launched.ended()

    def go(self, master: str = "") -> None:
        """Start the parked evaluation; `master` (64 hex digits, or none) is the seed its secret seeds derive from."""
        os.write(self.go_fd, f"go {master}".strip().encode("ascii") + b"\n")
        os.close(self.go_fd)
        self.go_fd = -1

    def collect(self) -> dict:
        """Read events until the harness ends or overruns; return its record (see run_evaluation)."""
        assert self.launched is not None
        spec, read_fd = self.spec, self.read_fd
        events: list[dict[str, Any]] = []
        buffer = b""
        deadline = time.monotonic() + spec.timeout + GRACE_SECONDS
        waiting_since: float | None = None  # a memory admission in progress: the backstop does not count it
        timed_out = False
        try:
            while True:
                now = time.monotonic()
                paused = min(now - waiting_since, MAX_MEMORY_WAIT_S) if waiting_since is not None else 0.0
                left = deadline + paused - now
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
                    kind = event.get("event")
                    if kind == "gpu_memory_waiting" and waiting_since is None:
                        waiting_since = time.monotonic()
                    elif kind in ("gpu_wait", "gpu_memory_wait") and isinstance(event.get("seconds"), int | float):
                        # queued behind other evaluations (their timing, their memory): not the kernel's time
                        deadline += min(max(0.0, float(event["seconds"])), MAX_MEMORY_WAIT_S)
                        if kind == "gpu_memory_wait":
                            waiting_since = None
        finally:
            os.close(read_fd)
            self.read_fd = -1
            # the launcher kills and reaps everything of the evaluation, then says how the orchestrator ended
            code = self.launched.finish(abort=timed_out)
        if timed_out:
            return _timeout_record(spec.timeout)
        return _record_from(events, code, self.log_path)

    def discard(self) -> None:
        """A standby that will not be used: end of file on its go pipe makes it stop its workers and exit."""
        if self.go_fd >= 0:
            os.close(self.go_fd)
            self.go_fd = -1
        if self.launched is not None:
            self.launched.finish(abort=False, timeout=20)  # past it: our end closed, which ends it too
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1
        self.cleanup(keep=False)

    def cleanup(self, *, keep: bool) -> None:
        if not keep:
            remove_work(self.work)


def _write(path: Path, text: str) -> None:
    """A new file of the runner's, readable by the group the launcher gives its folder (the orchestrator's)."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o640), "w") as fh:
        fh.write(text)


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
