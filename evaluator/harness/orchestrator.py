"""The evaluation driver (protocol.md sections 2-5): spawns the clean reference worker and the candidate worker,
draws a secret seed per trial (each worker regenerates that trial's inputs from it; the candidate learns it only when
its trial runs), runs correctness here and timing through timing_phase.py, and builds the result record.

stdlib only: this process never imports torch or candidate code, so its clock, its checks and its result channel
are out of the candidate's reach.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evaluator.harness.compile_cache import CacheEntry, cache_key
from evaluator.harness.gpu_lock import DeviceLock, LockTimeout
from evaluator.harness.hardening import become_subreaper, kill_adopted_children
from evaluator.harness.namespaces import BUILD_DIR, Plan, SandboxUnavailable, bwrap_path, choose_mode
from evaluator.harness.privileges import (
    Identity,
    UidLease,
    candidate_identity,
    check_runtime,
    give_to,
    open_path,
    take_back,
)
from evaluator.harness.protocol import (
    DISTRIBUTIONS,
    HARD_CHECKS,
    HARNESS_VERSION,
    MIXED_SIGNS,
    STANDARD_TOLERANCE,
    VERIFIED_TOLERANCE,
    Options,
    Spec,
    empty_result,
    get_check,
    set_check,
    shorten,
)
from evaluator.harness.sandbox import Worker, WorkerError, build_env
from evaluator.harness.timing_phase import TimingPhase

Emit = Callable[[dict[str, Any]], None]
# Steps without a like-for-like counterpart on the other side: they neither set nor obey the hang yardstick.
NOT_A_YARDSTICK = frozenset({"warm_up", "setup", "load", "extensions_dir", "set_problem", "probe_handover"})


class HarnessInfraError(Exception):
    """The evaluation could not be carried out for reasons that are not the candidate's fault."""


class CandidateFailed(Exception):
    """The candidate cannot go on (compile error, crash, timeout...): the record already says why."""


def _memory_limit(opts: Options) -> int:
    if opts.host_memory_mb:
        return opts.host_memory_mb << 20
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 8 << 30
    return max(2 << 30, total // 2)


def _user_process_count() -> int:
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid and len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


class Evaluation(TimingPhase):
    """One evaluation of one kernel against one problem."""

    def __init__(self, spec: Spec, emit: Emit) -> None:
        self.spec = spec
        self.emit = emit
        self.opts = Options.build(spec.options)
        self.record = empty_result()
        self.start = time.monotonic()
        self.deadline = self.start + float(spec.timeout)
        self.device = spec.device
        self.cuda = spec.device.startswith("cuda")
        self.seeds: list[int] = []
        self.work = Path(spec.work_dir)
        self.ref_dir = self.work / "reference"
        self.cand_dir = self.work / "candidate"
        self.io = self.cand_dir / "io"
        self.handoff = self.work / "handoff"  # files written by the clean side for the kernel to read (params)
        self.cache: CacheEntry | None = None
        self.ref: Worker | None = None
        self.cand: Worker | None = None
        self.ident: Identity | None = None  # the candidate's Unix user (None: ours)
        self.flags = {"plain": True, "alias": False, "unchanged": True, "shape_dtype": True}
        self.flag_details: dict[str, str] = {}
        self.output_bytes = 0
        self.input_bytes = 0
        self.timing_sets = 0
        self.closed = False
        self.ipc = False  # outputs come back on the device (cuda_fd or cuda_ipc), else through files in self.io
        self.sandbox = "none"  # "namespaces", "uid" or "none" (namespaces.py)
        self.lease: UidLease | None = None
        self.fd_socks: tuple[socket.socket, socket.socket] | None = None  # cuda_fd hand-over: (candidate, ref)
        self.ref_slowest = 0.0  # seconds of the reference's slowest step so far: the yardstick for a hang
        self.footprint: int | None = None  # one input set + output, from a meta-device forward
        self.fresh_base_times: list[float] = []
        self.fresh_times: list[float] = []

    # --- helpers ---------------------------------------------------------------------------------------------

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def seed(self) -> int:
        value = secrets.randbits(62)  # SystemRandom; the candidate learns a seed only when its trial runs
        self.seeds.append(value)
        return value

    def ask_ref(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.ref is not None
        started = time.monotonic()
        try:
            reply = self.ref.request(message, self.left())
            if message["cmd"] not in NOT_A_YARDSTICK:
                self.ref_slowest = max(self.ref_slowest, time.monotonic() - started)
        except WorkerError as exc:
            if exc.kind == "timeout":
                self.fail("timeout", f"timed out after {self.spec.timeout:.0f} s (reference side, {message['cmd']})")
            raise HarnessInfraError(f"reference worker failed during {message['cmd']}: {exc}") from exc
        if not reply.get("ok"):
            raise HarnessInfraError(f"reference {message['cmd']} failed: {reply.get('error', '')}")
        return reply

    def hang_limit(self, cmd: str) -> float | None:
        """Seconds a candidate step may take before it counts as a hang: far past the reference's slowest step
        (compiling and start-up have no reference counterpart and are bounded by the harness timeout only)."""
        if cmd in NOT_A_YARDSTICK or not self.ref_slowest:
            return None
        return self.opts.hang_factor * self.ref_slowest + self.opts.hang_grace_s

    def ask_cand(self, message: dict[str, Any], status: str = "runtime_error") -> dict[str, Any]:
        assert self.cand is not None
        cap = self.hang_limit(message["cmd"])
        budget = self.left() if cap is None else min(self.left(), cap)
        try:
            reply = self.cand.request(message, budget)
        except WorkerError as exc:
            if exc.kind == "timeout" and cap is not None and budget < self.left():
                self.fail(
                    "timeout",
                    f"the kernel hung: {message['cmd']} ran past {cap:.0f} s ({self.opts.hang_factor:g}x the "
                    f"reference's slowest step of {self.ref_slowest:.2f} s, plus {self.opts.hang_grace_s:g} s); "
                    "its processes were killed and the GPU released",
                )
            if exc.kind == "timeout":
                self.fail(
                    "timeout",
                    f"timed out after {self.spec.timeout:.0f} s during {message['cmd']}; "
                    "the candidate's process group was killed",
                )
            tail = self.cand.log_tail(600) if exc.kind == "died" else ""
            self.fail("runtime_error", f"{exc} (during {message['cmd']})" + (f"\n{tail}" if tail else ""))
        if not reply.get("ok"):
            phase = reply.get("phase", message["cmd"])
            kind = "compile_error" if phase == "compile" else status
            self.fail(kind, f"{phase} failed: {reply.get('error', '')}")
        return reply

    def fail(self, status: str, error: str) -> None:
        self.record["status"] = status
        self.record["error"] = shorten(error)
        # A kernel that crashes or hangs at any point (timing included) is not a working kernel: never "correct".
        self.record["correct"] = False
        self.record["standard_correct"] = False
        raise CandidateFailed(error)

    def phase(self, name: str, started: float) -> None:
        self.record["phases"][name] = round(time.monotonic() - started, 3)

    # --- the run ---------------------------------------------------------------------------------------------

    def run(self, ready: Callable[[], bool] | None = None) -> dict[str, Any] | None:
        """Evaluate; never raises for anything the candidate did (HarnessInfraError is the only way out).

        With `ready`, the workers start (and import torch) first and the evaluation waits for ready() to return:
        a standby harness, started while the previous evaluation runs, so that the next one skips process start-up.
        The problem and kernel files are read only after that, and the clock starts then. ready() returning False
        means the standby was not needed: nothing is evaluated and None is returned.
        """
        try:
            self._start_workers()
            if ready is not None:
                if not ready():
                    return None
                self.start = time.monotonic()
                self.deadline = self.start + float(self.spec.timeout)
                self.record["environment"]["prestarted_workers"] = True
                # spent before this evaluation's clock started: not part of its total
                self.record["phases"]["standby_workers"] = self.record["phases"].pop("workers")
            self._prepare()
            self._handover()
            if self._shares_gpu():
                with self._gpu("shared"):
                    self._correctness()
                with self._gpu("exclusive" if self._should_time() else "none"):
                    self._time_and_check()
            else:  # gigabyte tensors: one exclusive stretch, so no other evaluation's memory sits on the device
                with self._gpu("exclusive"):
                    self._correctness()
                    self._time_and_check()
            self._verdict()
        except CandidateFailed:
            pass
        finally:
            self._shutdown()
        self._environment()
        return self.record

    def _start_workers(self) -> None:
        """Private folders, limits, the candidate's Unix user, and both worker processes (they import torch side by
        side). Nothing here depends on the problem or the kernel."""
        become_subreaper()  # before any worker exists: processes a kernel leaves behind come back to us
        for d in (self.ref_dir, self.cand_dir, self.io):
            d.mkdir(parents=True, exist_ok=True)
        memory = _memory_limit(self.opts)
        limits = {
            "fsize_bytes": self.opts.file_size_mb << 20,
            "nproc": _user_process_count() + 4096,
            "data_bytes": 0 if self.cuda else memory,  # RLIMIT_DATA only on CPU; CUDA relies on the watchdog
            "cpu_seconds": int(self.spec.timeout) + 60,
        }
        python = self.spec.python or sys.executable
        # The kernel runs as an unprivileged user when we are root (privileges.py), one uid per evaluation: it owns
        # its own dir (the io dir inside it too: the reference, as root, still writes there), may enter the work dir
        # but not list it, and may not enter the reference's dir at all. Around it, its namespaces (namespaces.py).
        try:
            self.lease = UidLease(self.work.parent / ".sandbox-uids")
            ident = candidate_identity(lease=self.lease)
            uid, gid = ident if ident is not None else (os.getuid(), os.getgid())
            self.sandbox, why = choose_mode(uid=uid, gid=gid)
        except (ValueError, RuntimeError, SandboxUnavailable) as exc:
            raise HarnessInfraError(str(exc)) from exc
        env = self.record["environment"]
        env.update(candidate_uid=ident[0] if ident else None, sandbox=self.sandbox, sandbox_reason=why)
        self.ident = ident
        if ident is not None:
            open_path(self.work, ident)
            os.chmod(self.work, 0o711)
            os.chmod(self.ref_dir, 0o700)
        plan: Plan | None = None
        self.handoff.mkdir(mode=0o755, exist_ok=True)  # the orchestrator's: the kernel may read here, never write
        if self.sandbox == "namespaces":
            (self.cand_dir / "build").mkdir(exist_ok=True)
            bwrap = bwrap_path()
            assert bwrap is not None  # choose_mode found it
            plan = Plan(
                bwrap=bwrap,
                python=python,
                private_dir=self.cand_dir,
                build_dir=self.cand_dir / "build",
                etc_dir=self.work / "sandbox-etc",
                handoff_dir=self.handoff,
                cuda=self.cuda,
                tmp_bytes=self.opts.tmp_mb << 20,
                uid=uid,
                gid=gid,
            )
            plan.write_etc()
        if ident is not None:
            give_to(self.cand_dir, ident)
            os.chmod(self.io, 0o700)
        if self.cuda:  # the zero-copy output hand-over's socket (cuda_fd.py): one end for each worker
            self.fd_socks = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            for sock in self.fd_socks:
                os.set_inheritable(sock.fileno(), True)
        cand_env = build_env(private_dir=self.cand_dir)
        if plan is not None:
            cand_env["USER"] = cand_env["LOGNAME"] = "kernel"
        unusable = check_runtime(python, ident, env=cand_env, cwd=self.cand_dir, wrap=plan.wrap if plan else None)
        if unusable:  # fail closed: never fall back to running the kernel as root, never blame the kernel for it
            raise HarnessInfraError(unusable)
        self.ref = Worker(
            role="reference",
            private_dir=self.ref_dir,
            env=build_env(private_dir=self.ref_dir),
            limits=limits,
            python=python,
            memory_limit_bytes=memory,
            extra_fds=(self.fd_socks[1].fileno(),) if self.fd_socks else (),
        )
        self.cand = Worker(
            role="candidate",
            private_dir=self.cand_dir,
            env=cand_env,
            limits={**limits, "pid_namespace": plan is not None},
            python=python,
            memory_limit_bytes=memory,
            run_as=ident,
            wrap=plan.wrap if plan else None,
            extra_fds=(self.fd_socks[0].fileno(),) if self.fd_socks else (),
            disk_limit_bytes=self.opts.work_dir_mb << 20,
        )
        self.ref.start()
        self.emit({"event": "worker", "role": "reference", "pid": self.ref.pid})
        self.cand.start()  # both import torch in parallel
        self.emit({"event": "worker", "role": "candidate", "pid": self.cand.pid})
        self.ask_ref({"cmd": "warm_up", "device": self.device, "meta": True})
        try:
            self.ask_cand({"cmd": "warm_up", "device": self.device})
        except CandidateFailed as exc:  # no kernel code has run yet: not the kernel's failure
            raise HarnessInfraError(f"candidate worker failed before the kernel was loaded: {exc}") from exc
        self.record["environment"]["limits"] = {"host_memory_bytes": memory, **limits}
        self.phase("workers", self.start)  # part of "start": spawned, torch imported, CUDA context made

    def _prepare(self) -> None:
        problem = self.ref_dir / "problem.py"
        kernel = self.cand_dir / "kernel.py"
        shutil.copyfile(self.spec.problem_path, problem)
        shutil.copyfile(self.spec.kernel_path, kernel)  # readable by the candidate's user; its folder stays its own
        self.kernel_source = kernel.read_text(errors="replace")
        self.kernel_sha = hashlib.sha256(self.kernel_source.encode()).hexdigest()
        setup = self.ask_ref(
            {
                "cmd": "setup",
                "problem_path": str(problem),
                "device": self.device,
                "init_path": str(self.io / "init.pt"),
                "gpu_memory_fraction": self.opts.gpu_memory_fraction,
            }
        )
        self.info = setup["info"]
        self.footprint = setup.get("footprint_bytes")
        self.phase("start", self.start)  # workers spawned, torch imported, the reference built on the device

        started = time.monotonic()
        ext_dir = self.cand_dir / "torch_extensions"
        sandboxed = self.sandbox == "namespaces"
        cache_state = "disabled"
        if self.spec.compile_cache_dir:
            key = cache_key(
                source=self.kernel_source,
                torch_version=self.info["torch"],
                cuda_version=self.info["cuda"],
                arch=self.info["arch"],
            )
            self.cache = CacheEntry(Path(self.spec.compile_cache_dir), key)
            if not self.cache.acquire(max(self.left() - 5, 1)):
                raise HarnessInfraError("compile cache entry stayed locked")
            cache_state = "hit" if self.cache.check_hit() else "miss"
            if sandboxed:
                # The kernel never sees the cache: a hit is copied into its own build folder, which it sees at one
                # fixed path (BUILD_DIR) in every evaluation, so ninja finds the copied build up to date.
                ext_dir = Path(BUILD_DIR)
                if cache_state == "hit":
                    shutil.copytree(self.cache.build_dir, self.cand_dir / "build", symlinks=True, dirs_exist_ok=True)
                    give_to(self.cand_dir / "build", self.ident)
            else:
                ext_dir = self.cache.build_dir
                open_path(ext_dir, self.ident)
                give_to(ext_dir, self.ident)  # torch writes a lock file and build.ninja there even on a hit
        elif sandboxed:
            ext_dir = Path(BUILD_DIR)
        self.record["environment"]["compile_cache"] = cache_state
        try:
            loaded = self.ask_cand(
                {
                    "cmd": "load",
                    "kernel_path": str(self.cand_dir / "kernel.py"),
                    "device": self.device,
                    "init_path": str(self.io / "init.pt"),
                    "extensions_dir": str(ext_dir),
                    "suffix": self.kernel_sha[:12],
                    "gpu_memory_fraction": self.opts.gpu_memory_fraction,
                }
            )
        except CandidateFailed:
            if self.cache:
                self.cache.discard()
            raise
        finally:
            self.phase("compile", started)
        if self.cache and sandboxed:
            self._cache_sandboxed_build(cache_state, loaded["compile_s"])
        elif self.cache:
            # Built: from now on the kernel cannot change the entry, except triton/, which Triton only fills at the
            # first call (its files are not in the manifest, so anything there makes the next check a rebuild).
            take_back(self.cache.build_dir, self.ident)
            give_to(self.cache.build_dir / "triton", self.ident)
            if cache_state == "miss":
                self.cache.commit(loaded["compile_s"])
            self.cache.release()
            if not any(p.name not in ("lock", "triton") for p in self.cache.build_dir.iterdir()):
                # Nothing was built at import: a kernel that calls load_inline on its first forward() builds into
                # a private folder instead (uncached) rather than into the entry it can no longer write.
                self.ask_cand({"cmd": "extensions_dir", "path": str(self.cand_dir / "torch_extensions")})
        self.record["phases"]["compile_import"] = round(loaded["compile_s"], 3)
        self.state_entries = loaded["state"]
        self._integrity("after import")
        if self.opts.compile_only:
            self.record["status"] = "ok"
            self.record["error"] = "compile only: nothing else was run"
            raise CandidateFailed("compile only")

    def _cache_sandboxed_build(self, cache_state: str, compile_s: float) -> None:
        """After a sandboxed import: a fresh build goes into the cache (copied out of the kernel's folder, without
        links or anything but regular files and folders, before the kernel runs again); a kernel that built nothing
        at import leaves no entry."""
        assert self.cache is not None
        built = self.cand_dir / "build"
        if cache_state == "miss":
            names = [p.name for p in built.iterdir() if p.name not in ("lock", "triton")] if built.is_dir() else []
            if names:
                shutil.rmtree(self.cache.build_dir, ignore_errors=True)
                shutil.copytree(
                    built,
                    self.cache.build_dir,
                    symlinks=True,
                    ignore=lambda d, files: [f for f in files if f in ("lock", "triton") or os.path.islink(f"{d}/{f}")],
                )
                take_back(self.cache.build_dir, self.ident)
                self.cache.commit(compile_s)
            else:
                self.cache.discard()
        self.cache.release()

    @contextlib.contextmanager
    def _gpu(self, mode: str) -> Iterator[None]:
        """Share the GPU for correctness, own it for timing (see gpu_lock.py). Time spent queueing is added to the
        deadline: it is not the kernel's time."""
        if mode == "none" or not (self.cuda and self.opts.gpu_lock_dir):
            yield
            return
        lock = DeviceLock(self.opts.gpu_lock_dir, self.info.get("uuid") or self.info.get("device_name", "gpu"))
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context((lock.shared if mode == "shared" else lock.exclusive)(self.deadline + 3600))
            except LockTimeout as exc:
                raise HarnessInfraError(str(exc)) from exc
            self.deadline += lock.waited_s
            phases = self.record["phases"]
            phases["gpu_wait"] = round(phases.get("gpu_wait", 0.0) + lock.waited_s, 3)
            self.emit({"event": "gpu_wait", "seconds": lock.waited_s})
            if mode == "exclusive" and not self._shares_gpu():
                # gigabyte tensors: the workers go before the lock does, their device memory with them (small
                # evaluations exit after the release, so the next timer does not wait for two processes to end)
                stack.callback(self._shutdown)
            yield

    def _time_and_check(self) -> None:
        if self._should_time():
            self._timing()
        self._final_integrity()

    def _shares_gpu(self) -> bool:
        """Small evaluations run correctness alongside others; gigabyte tensors (or unknown sizes) do not."""
        return self.footprint is not None and self.footprint <= self.opts.gpu_share_max_mb << 20

    def _handover(self) -> None:
        """Give the candidate the problem's get_inputs (inputs are regenerated from seeds on both sides, never
        shipped) and pick how outputs travel back: CUDA IPC when the reference can open the candidate's handles."""
        self.ask_cand({"cmd": "set_problem", "source": Path(self.spec.problem_path).read_text()})
        handover, reasons = "file", ["cpu device"] if not self.cuda else []
        if self.fd_socks is not None:  # zero-copy across the sandbox: a shared buffer passed as a file descriptor
            cand_fd, ref_fd = (sock.fileno() for sock in self.fd_socks)
            offer = self.ask_cand({"cmd": "probe_handover", "fd_socket": cand_fd})
            if offer.get("desc"):
                probe = self.ask_ref({"cmd": "probe_handover", "desc": offer["desc"], "fd_socket": ref_fd})
                handover = "cuda_fd" if probe.get("opened") else handover
                reasons.append(f"cuda_fd: {probe.get('reason')}")
            else:
                reasons.append(f"cuda_fd: {offer.get('reason')}")
        if self.cuda and handover == "file":  # legacy CUDA IPC handles: same user and namespaces only
            desc = self.ask_cand({"cmd": "probe_handover"})["desc"]
            probe = self.ask_ref({"cmd": "probe_handover", "desc": desc})
            handover = "cuda_ipc" if probe.get("opened") else handover
            reasons.append(f"cuda_ipc: {probe.get('reason')}")
        if self.cuda:
            self.ask_cand({"cmd": "use_handover", "handover": handover})
        self.ipc = handover != "file"
        self.record["environment"]["output_handover"] = (
            handover if self.ipc else f"file ({'; '.join(str(r) for r in reasons) or 'probe failed'})"
        )

    def _output(self, desc: Any, path: str) -> dict[str, Any]:
        """What the reference needs to read one published output; the path is always ours, never the kernel's."""
        return {"desc": desc if isinstance(desc, dict) else {}, "path": path}

    def _release(self) -> None:
        if self.ipc:  # cuda_ipc keeps exported outputs alive until now; cuda_fd reuses one buffer (a no-op there)
            self.ask_cand({"cmd": "release"})

    # --- correctness -----------------------------------------------------------------------------------------

    def _trial(
        self, key: str, scale: float | str, tol: float, *, track_constant: bool = True, determinism: bool = False
    ) -> dict[str, Any]:
        """One trial: reference on inputs from a secret seed, the candidate on the same seed's inputs, comparison."""
        seed = self.seed()
        made = self.ask_ref(
            {"cmd": "make_trial", "key": key, "seed": seed, "scale": scale, "track_constant": track_constant}
        )
        if made.get("skipped"):
            return {"skipped": made["skipped"]}
        self.output_bytes = max(self.output_bytes, int(made["output_bytes"]))
        self.input_bytes = max(self.input_bytes, int(made.get("input_bytes") or 0))
        poison_bytes = 2 * int(made["output_bytes"]) + (64 << 20)
        out_a, out_b = str(self.io / f"{key}_out.pt"), str(self.io / f"{key}_out_b.pt")
        run = self._cand_run(seed, scale, out_a, float("nan"), poison_bytes)
        message: dict[str, Any] = {"cmd": "compare", "key": key, "output": None, "tol": tol}
        if run.get("plain"):
            message["output"] = self._output(run.get("desc"), out_a)
            if determinism:
                again = self._cand_run(seed, scale, out_b, 0.0, poison_bytes)
                message["again"] = self._output(again.get("desc"), out_b) if again.get("plain") else None
        result = self.ask_ref(message)  # without an output this only drops the stored reference
        self._release()
        if not run.get("plain"):
            result = {"passed": False, "plain": False, "reason": f"output is {run.get('out_type')}, not torch.Tensor"}
        if "determinism" in result:
            pair = result["determinism"]
            detail = (
                f"same inputs twice, allocator poisoned with NaN then 0: max abs difference {pair.get('max_abs_error')}"
            )
            passed = bool(pair.get("passed"))
            set_check(self.record, "determinism", passed, detail if passed else f"{detail}; {pair.get('reason', '')}")
        if result.get("plain") is False:
            self.flags["plain"] = False
            self.flag_details.setdefault("plain", result.get("reason", ""))
        if result.get("shape_dtype") is False:
            self.flags["shape_dtype"] = False
            self.flag_details.setdefault("shape_dtype", result.get("reason", ""))
        return result

    def _cand_run(
        self, seed: int, scale: float | str, out_path: str, poison: float, poison_bytes: int
    ) -> dict[str, Any]:
        run = self.ask_cand(
            {
                "cmd": "run",
                "seed": seed,
                "scale": scale,
                "out_path": out_path,
                "poison": poison,
                "poison_bytes": poison_bytes,
                "max_output_bytes": self.opts.max_output_mb << 20,
            }
        )
        if not run.get("plain"):
            self.flags["plain"] = False
            self.flag_details.setdefault("plain", f"forward returned {run.get('out_type')}, not a plain torch.Tensor")
        if run.get("alias"):
            self.flags["alias"] = True
        if run.get("inputs_unchanged") is False:
            self.flags["unchanged"] = False
        return run

    def _correctness(self) -> None:
        started = time.monotonic()
        # Standard protocol (what published KernelBench numbers used): default init, D1 only, 5 trials, 1e-2.
        standard = []
        for t in range(self.opts.standard_trials):
            res = self._trial(f"S{t}", 1.0, STANDARD_TOLERANCE, track_constant=False)
            if "skipped" in res:
                raise HarnessInfraError(f"reference unusable under D1: {res['skipped']}")
            standard.append(bool(res.get("passed")))
        self.record["standard_correct"] = all(standard)
        self.record["environment"]["standard_protocol"] = {
            "trials": len(standard),
            "tolerance": STANDARD_TOLERANCE,
            "distribution": "D1",
            "params": "default init",
        }
        self._randomise()
        for dist in self.record["distributions"]:
            factor = dict(DISTRIBUTIONS)[dist["name"]]
            errors_abs, errors_rel, passed = [], [], True
            for t in range(self.opts.verified_trials):
                res = self._trial(
                    f"{dist['name']}_{t}", factor, VERIFIED_TOLERANCE, determinism=(dist["name"] == "D1" and t == 0)
                )
                if "skipped" in res:
                    dist.update(skipped=True, skip_reason=res["skipped"][:300], passed=None, trials=0)
                    break
                dist["trials"] += 1
                if res.get("max_abs_error") is not None:
                    errors_abs.append(res["max_abs_error"])
                if res.get("max_rel_error") is not None:
                    errors_rel.append(res["max_rel_error"])
                if not res.get("passed"):
                    passed = False
                    dist["error"] = dist["error"] or res.get("reason", "")[:300]
            if not dist["skipped"]:
                dist.update(
                    passed=passed,
                    max_abs_error=max(errors_abs, default=None),
                    max_rel_error=max(errors_rel, default=None),
                )
        active = [d for d in self.record["distributions"] if not d["skipped"]]
        if not active:
            raise HarnessInfraError("the reference gives NaN/Inf or raises under every distribution")
        mixed = self._mixed_signs()
        self.record["correct"] = all(d["passed"] for d in active) and mixed is not False
        constant = self.ask_ref({"cmd": "constant"})
        self.ask_cand({"cmd": "release", "empty_cache": True})
        self.record["reference_constant"] = constant["constant"]
        self._integrity("after correctness")
        self.phase("correctness", started)

    def _mixed_signs(self) -> bool | None:
        """One trial with a random sign per input element (B7: D1-D4 leave each tensor single-signed, so probing a
        few elements could route each distribution to a path that is right only for it)."""
        res = self._trial("M0", MIXED_SIGNS, VERIFIED_TOLERANCE, track_constant=False)
        if "skipped" in res:
            set_check(self.record, "mixed_sign_inputs", None, "not applicable: " + res["skipped"][:200])
            return None
        passed = bool(res.get("passed"))
        detail = "float inputs positive but for up to 64 random elements negated (one trial, 1e-3): "
        set_check(
            self.record, "mixed_sign_inputs", passed, detail + ("passed" if passed else res.get("reason", "")[:300])
        )
        return passed

    def _randomise(self) -> None:
        if not self.opts.randomise_params:
            self.record["params_randomised"] = False
            set_check(self.record, "params_randomised", False, "disabled by option (paper protocol: default init)")
            return
        floats = [
            e for e in self.state_entries if e[2].startswith("torch.float") or e[2] in ("torch.half", "torch.bfloat16")
        ]
        # Written by the clean side after kernel code ran, so never into a directory the kernel owns (a planted
        # symlink there would make the reference overwrite any file): a fresh directory of the orchestrator's own.
        params = self.handoff / "params.pt"
        reply = self.ask_ref({"cmd": "randomise", "entries": floats, "seed": self.seed(), "out_path": str(params)})
        if reply["matched"]:  # the reference randomised all of its float entries, the candidate gets the matched ones
            self.ask_cand({"cmd": "load_params", "path": str(params)})
        params.unlink(missing_ok=True)
        total, matched, missing = reply["total"], reply["matched"], reply["missing"]
        if total == 0:
            ok, detail = True, "nothing to randomise: the reference has no float parameters or buffers"
        elif not missing:
            ok, detail = True, f"all {total} float parameters/buffers randomised in both models"
        else:
            ok = False
            detail = (
                f"{len(matched)} of {total} randomised; ModelNew has no same-name, same-shape entry for: "
                + ", ".join(missing[:8])
                + (" ..." if len(missing) > 8 else "")
                + " (randomised in the reference all the same: a kernel that hard-codes their default values fails)"
            )
        self.record["params_randomised"] = ok
        set_check(self.record, "params_randomised", ok, detail)

    def _should_time(self) -> bool:
        hard_fail = self.flags["alias"] or not self.flags["plain"] or not self.flags["unchanged"]
        tampered = get_check(self.record, "timer_integrity")
        threads = get_check(self.record, "thread_count")
        if hard_fail or (tampered and tampered["passed"] is False) or (threads and threads["passed"] is False):
            return False
        return bool(self.record["correct"] or self.record["standard_correct"])

    # --- checks and verdict ----------------------------------------------------------------------------------

    def _integrity(self, when: str) -> None:
        reply = self.ask_cand({"cmd": "integrity"})
        tampered, threads = reply["tampered"], sorted(set(reply["threads"]))
        prior = get_check(self.record, "timer_integrity")
        if tampered or not (prior and prior["passed"] is False):
            set_check(
                self.record,
                "timer_integrity",
                not tampered,
                f"replaced {when}: {', '.join(tampered)[:300]}"
                if tampered
                else f"timer and checker functions unchanged ({when})",
            )
        prior = get_check(self.record, "thread_count")
        if threads or not (prior and prior["passed"] is False):
            native = f"; native threads {reply['native_at_start']} -> {reply['native_threads']}"
            set_check(
                self.record,
                "thread_count",
                not threads,
                (
                    f"Python threads started by the kernel ({when}): {', '.join(threads)[:200]}"
                    if threads
                    else f"no Python threads started by the kernel ({when})"
                )
                + native,
            )

    def _final_integrity(self) -> None:
        self._integrity("at the end")

    def _verdict(self) -> None:
        details = self.flag_details
        set_check(
            self.record,
            "output_plain_tensor",
            self.flags["plain"],
            details.get("plain", "every output was a plain torch.Tensor"),
        )
        set_check(
            self.record,
            "output_no_alias",
            not self.flags["alias"],
            "an output shared storage with an input" if self.flags["alias"] else "no output aliased an input",
        )
        set_check(
            self.record,
            "inputs_unchanged",
            self.flags["unchanged"],
            "inputs were unchanged after every call"
            if self.flags["unchanged"]
            else "the kernel modified its inputs in place",
        )
        set_check(
            self.record,
            "output_shape_dtype",
            self.flags["shape_dtype"],
            details.get("shape_dtype", "shape and dtype matched the reference"),
        )
        failed_hard = [c["name"] for c in self.record["checks"] if c["name"] in HARD_CHECKS and c["passed"] is False]
        recheck = get_check(self.record, "timed_output_recheck")
        if self.record["correct"] and recheck and recheck["passed"] is False:
            # passed the gate, yet wrong while being timed: it behaves differently when timed (A6 replay, A7)
            failed_hard.append("timed_output_recheck")
        if failed_hard:
            self.record["status"] = "rejected"
            self.record["correct"] = False
            self.record["standard_correct"] = False
            self.record["error"] = "rejected by runtime checks: " + ", ".join(failed_hard)
            return
        self.record["status"] = "ok"
        if not self.record["correct"]:
            failed = [f"{d['name']}: {d['error']}" for d in self.record["distributions"] if d["passed"] is False]
            mixed = get_check(self.record, "mixed_sign_inputs")
            if mixed and mixed["passed"] is False:
                failed.append(f"mixed signs: {mixed['detail']}")
            self.record["error"] = shorten("incorrect: " + "; ".join(failed), 600)

    def _shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        started = time.monotonic()
        workers = [w for w in (self.cand, self.ref) if w is not None]
        for worker in workers:  # both exit (CUDA context teardown) at once, then each is waited for and reaped
            worker.ask_exit()
        for worker in workers:
            worker.close()
        stray = kill_adopted_children(ignore=frozenset({"bwrap"}) if self.sandbox == "namespaces" else frozenset())
        if stray:
            set_check(
                self.record,
                "process_containment",
                False,
                f"{stray} processes started by the kernel outlived its worker and were killed",
            )
        if self.cache is not None:
            self.cache.release()
        for sock in self.fd_socks or ():
            sock.close()
        if not self.opts.keep_workdir:
            shutil.rmtree(self.io, ignore_errors=True)
            shutil.rmtree(self.cand_dir / "build", ignore_errors=True)
        if self.lease is not None:
            self.lease.release()  # after the kernel's processes are gone: the next evaluation may take this uid
        self.phase("shutdown", started)

    def _environment(self) -> None:
        env = self.record["environment"]
        info = getattr(self, "info", {}) or {}
        env.update(
            harness_version=HARNESS_VERSION,
            device=self.device,
            device_name=info.get("device_name"),
            arch=info.get("arch"),
            torch=info.get("torch"),
            cuda=info.get("cuda"),
            cudnn=info.get("cudnn"),
            python=info.get("python"),
            hardware=self.opts.hardware or info.get("device_name"),
            seeds_digest=hashlib.sha256(",".join(map(str, self.seeds)).encode()).hexdigest(),
            kernel_sha256=getattr(self, "kernel_sha", None),
            options={
                "quick": self.opts.quick,
                "compile_baseline": self.opts.compile_baseline,
                "randomise_params": self.opts.randomise_params,
                "verified_trials": self.opts.verified_trials,
            },
            tolerance={"verified": VERIFIED_TOLERANCE, "standard": STANDARD_TOLERANCE},
            precision_flags={
                "reference": {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False},
                "candidate": {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True},
                "baseline_tf32": {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True},
                "baseline_fp32": {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False},
            },
        )
        self.record["phases"]["total"] = round(time.monotonic() - self.start, 3)


def evaluate(spec: Spec, emit: Emit | None = None, ready: Callable[[], bool] | None = None) -> dict[str, Any] | None:
    """Run one evaluation and return its record (None: a standby that was not needed, see Evaluation.run).
    Raises HarnessInfraError only for faults that are not the kernel's."""
    return Evaluation(spec, emit or (lambda event: None)).run(ready)
