"""The orchestrator's side of each worker's pipe: one method per command (commands.py), the evaluation's deadline
on every request, and what a failed request means.

The two clients differ in whom a failure blames. The reference worker runs no kernel code, so anything but a
timeout there is ours (HarnessInfraError). The candidate worker's failures are the kernel's (CandidateFailed, with
the record's status), and every candidate step after the kernel's import may also be cut short as a hang: far past
the reference's slowest like-for-like step, or past the load step's own bound for a step with no counterpart, with
the time a step that may build is seen compiling added (build_watch.py), so a kernel that spins cannot hold a GPU
for the whole harness timeout.

stdlib only, like the orchestrator.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from evaluator.harness.commands import Command
from evaluator.harness.errors import CandidateFailed, HarnessInfraError
from evaluator.harness.orchestrator.build_watch import BuildAllowance, StepBound, building
from evaluator.harness.orchestrator.replies import check_reply
from evaluator.harness.sandbox.spawn import Worker, WorkerError

Reply = dict[str, Any]

# Steps without a like-for-like counterpart on the other side: they neither set nor obey the hang yardstick.
NOT_A_YARDSTICK = frozenset(
    {
        Command.WARM_UP,
        Command.SETUP,
        Command.LOAD,
        Command.EXTENSIONS_DIR,
        Command.SET_PROBLEM,
        Command.PROBE_HANDOVER,
    }
)

# A kernel's first call of these in a worker process may build its code: its clock stops while it is seen building
# (build_watch.py), once per process.
FIRST_CALL_COMPILES = frozenset({Command.RUN, Command.TIMING_SETUP})


class Deadline:
    """The evaluation's clock: `timeout_s` from the start, pushed back by time spent queueing for the GPU."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.restart()

    def restart(self) -> None:
        """Start the clock again (a standby harness: its evaluation begins only when it is needed)."""
        self.start = time.monotonic()
        self.at = self.start + self.timeout_s

    def left(self) -> float:
        return self.at - time.monotonic()

    def extend(self, seconds: float) -> None:
        self.at += seconds


Gate = Callable[[Command], AbstractContextManager[None]]  # held around each command (gpu_holds.GpuHolds.command)


def no_gate(cmd: Command) -> AbstractContextManager[None]:
    """A command that takes nothing of the GPU (no evaluation's holds around it: unit tests, tools)."""
    return contextlib.nullcontext()


class ReferenceClient:
    """The clean reference worker (reference_worker.py)."""

    def __init__(self, worker: Worker, deadline: Deadline, gate: Gate = no_gate) -> None:
        self.worker = worker
        self.deadline = deadline
        self.gate = gate
        self.slowest = 0.0  # seconds of the slowest like-for-like step so far: the yardstick for a candidate hang

    def _ask(self, cmd: Command, **fields: Any) -> Reply:
        try:
            with self.gate(cmd):
                started = time.monotonic()
                reply = self.worker.request({"cmd": cmd, **fields}, self.deadline.left())
            if cmd not in NOT_A_YARDSTICK:
                self.slowest = max(self.slowest, time.monotonic() - started)
        except WorkerError as exc:
            if exc.kind == "timeout":  # the evaluation's whole budget is spent, whichever side was running
                timeout = self.deadline.timeout_s
                raise CandidateFailed(f"timed out after {timeout:.0f} s (reference side, {cmd})", "timeout") from exc
            tail = self.worker.log_tail(600) if exc.kind == "died" else ""  # ours: no kernel code runs there
            raise HarnessInfraError(
                f"reference worker failed during {cmd}: {exc}" + (f"\n{tail}" if tail else "")
            ) from exc
        if not reply.get("ok"):
            raise HarnessInfraError(f"reference {cmd} failed: {reply.get('error', '')}")
        return reply

    def warm_up(self, device: str, *, meta: bool = True) -> Reply:
        return self._ask(Command.WARM_UP, device=device, meta=meta)

    def survey(self, *, problem_path: str, init_path: str) -> Reply:
        return self._ask(Command.SURVEY, problem_path=problem_path, init_path=init_path)

    def setup(self, *, problem_path: str, device: str, init_path: str, gpu_memory_fraction: float) -> Reply:
        return self._ask(
            Command.SETUP,
            problem_path=problem_path,
            device=device,
            init_path=init_path,
            gpu_memory_fraction=gpu_memory_fraction,
        )

    def probe_handover(self, desc: Any, fd_socket: int | None = None) -> Reply:
        if fd_socket is None:
            return self._ask(Command.PROBE_HANDOVER, desc=desc)
        return self._ask(Command.PROBE_HANDOVER, desc=desc, fd_socket=fd_socket)

    def make_trial(self, *, key: str, seed: int, scale: float | str, track_constant: bool) -> Reply:
        return self._ask(Command.MAKE_TRIAL, key=key, seed=seed, scale=scale, track_constant=track_constant)

    def compare(
        self,
        *,
        key: str,
        output: Reply | None,
        tol: float,
        again: Reply | None | bool = False,
        previous: str | None = None,
    ) -> Reply:
        """Compare (and drop) the stored reference of `key`; `again` (the determinism pair's second output, None
        when it was no plain tensor) is sent only when given: False means no determinism pair at all. `previous`:
        the key of the reference for the inputs' previous contents (refilled inputs), also dropped."""
        optional = {"again": again, "previous": previous}
        sent = {k: v for k, v in optional.items() if v is not (False if k == "again" else None)}
        return self._ask(Command.COMPARE, key=key, output=output, tol=tol, **sent)

    def constant(self) -> Reply:
        return self._ask(Command.CONSTANT)

    def device_memory(self) -> Reply:
        return self._ask(Command.DEVICE_MEMORY)

    def randomise(self, *, entries: list[Any], seed: int, out_path: str) -> Reply:
        return self._ask(Command.RANDOMISE, entries=entries, seed=seed, out_path=out_path)

    def timing_setup(self, *, seeds: list[int], warmup: int, compile: bool, lead_us: float) -> Reply:
        return self._ask(Command.TIMING_SETUP, seeds=seeds, warmup=warmup, compile=compile, lead_us=lead_us)

    def memory(self) -> Reply:
        return self._ask(Command.MEMORY)

    def launched_kernels(self, trace_path: str | None = None) -> Reply:
        return self._ask(Command.LAUNCHED_KERNELS, trace_path=trace_path)

    def time_block(self, *, mode: str, n: int, offset: int, paper: bool = False) -> Reply:
        return self._ask(Command.TIME_BLOCK, mode=mode, n=n, offset=offset, paper=paper)

    def fresh_sets(self, *, seeds: list[int], start: int) -> Reply:
        return self._ask(Command.FRESH_SETS, seeds=seeds, start=start)

    def recheck(self, *, outputs: dict[str, Reply], tol: float, fresh_start: int) -> Reply:
        return self._ask(Command.RECHECK, outputs=outputs, tol=tol, fresh_start=fresh_start)

    def precision_flags(self) -> Reply:
        return self._ask(Command.PRECISION_FLAGS)


class CandidateClient:
    """The candidate worker (candidate_worker.py): every failure is the kernel's."""

    def __init__(
        self,
        worker: Worker,
        deadline: Deadline,
        reference: ReferenceClient,
        *,
        hang_factor: float,
        hang_grace_s: float,
        gate: Gate = no_gate,
        load_s: float | None = None,
        build_s: float | None = None,
    ) -> None:
        self.worker = worker
        self.deadline = deadline
        self.gate = gate
        self.reference = reference  # whose slowest step is the yardstick for a hang
        self.hang_factor = hang_factor
        self.hang_grace_s = hang_grace_s
        self.first_calls: set[Command] = set()  # commands this worker process has already answered once
        # The load step's own bound (import and __init__, time seen compiling not counted): also the bound of every
        # step without a reference counterpart. And the most a step that may build takes while it is seen building
        # (build_watch.py). None: only the evaluation's deadline.
        self.load_limit_s = load_s if load_s is None or build_s is None else min(load_s, build_s)
        self.build_limit_s = build_s

    def hang_cap(self) -> float:
        """Far past the reference's slowest like-for-like step so far (the grace alone before it has one)."""
        return self.hang_factor * self.reference.slowest + self.hang_grace_s

    def step_bound(self, cmd: Command) -> StepBound:
        """How long a candidate step may take before it counts as a hang. Every step after the kernel's import has a
        bound: far past the reference's slowest step, or the load step's bound for a step with no counterpart there
        (setting the problem, the hand-over probe, anything before the reference ran a like-for-like step). The load
        and each worker process's first forward and first timing set-up may also build (load_inline on the first
        call, Triton's and torch.compile's first-call builds): their clock stops while a build is seen, up to the
        build limit (build_watch.py). Warming up runs before any kernel code: the deadline alone."""
        if cmd == Command.WARM_UP:
            return StepBound(None)
        if cmd == Command.LOAD:
            return StepBound(self.load_limit_s, may_build=True, why="load")
        cap = self.hang_cap()
        if cmd in FIRST_CALL_COMPILES and cmd not in self.first_calls:
            return StepBound(cap, may_build=True, why="first call")
        if cmd in NOT_A_YARDSTICK or not self.reference.slowest:
            return StepBound(self.load_limit_s, why="no counterpart")
        return StepBound(cap, why="hang")

    def _building(self) -> str | None:
        return building(self.worker.processes())

    def _ask(self, cmd: Command, **fields: Any) -> Reply:
        bound = self.step_bound(cmd)
        allowance = None
        try:
            with self.gate(cmd):  # queueing for the GPU is not the kernel's time: the budget is taken after it
                left = self.deadline.left()
                budget = left if bound.own_s is None else min(left, bound.own_s)
                if bound.may_build and self.build_limit_s is not None and bound.own_s is not None:
                    allowance = BuildAllowance(self._building, ceiling_s=self.build_limit_s, hard_end=self.deadline.at)
                reply = self.worker.request({"cmd": cmd, **fields}, budget, allowance.extend if allowance else None)
            self.first_calls.add(cmd)
        except WorkerError as exc:
            # a hang only while the evaluation still had time to spare after it (else: the plain timeout)
            hung = exc.kind == "timeout" and bound.own_s is not None and self.deadline.left() > 1.0
            raise CandidateFailed(self._why(cmd, exc, bound, allowance, hung=hung), self._status(exc)) from exc
        if reply.get("ok") is not True:
            phase = str(reply.get("phase", cmd))[:40]
            status = "compile_error" if phase == "compile" else "runtime_error"
            raise CandidateFailed(f"{phase} failed: {str(reply.get('error', ''))[:4000]}", status)
        return check_reply(cmd, reply)

    @staticmethod
    def _status(exc: WorkerError) -> str:
        return "timeout" if exc.kind == "timeout" else "runtime_error"

    def _why(
        self, cmd: Command, exc: WorkerError, bound: StepBound, allowance: BuildAllowance | None, *, hung: bool
    ) -> str:
        own = bound.own_s or 0.0
        built = ""
        if allowance is not None:
            built = (
                f"; seen compiling for {allowance.built_s:.0f} s more ({allowance.seen})"
                if allowance.built_s
                else f"; no build was seen (a build may stretch it to {self.build_limit_s:.0f} s)"
            )
        killed = "its processes were killed and the GPU released"
        if hung and allowance is not None and allowance.capped:
            return (
                f"the kernel's build ran past its {self.build_limit_s:.0f} s limit during {cmd} "
                f"(seen compiling: {allowance.seen}); {killed}"
            )
        if hung and bound.why == "load":
            return (
                f"the kernel's load step ran past its {own:.0f} s bound during {cmd} (import and __init__, bounded "
                f"on their own, well under the harness timeout{built}); {killed}"
            )
        yardstick = (
            f"{self.hang_factor:g}x the reference's slowest step of {self.reference.slowest:.2f} s, plus "
            f"{self.hang_grace_s:g} s"
        )
        if hung and bound.why == "first call":
            return (
                f"the kernel hung: its first {cmd} in this process ran past {own:.0f} s ({yardstick}{built}); {killed}"
            )
        if hung and bound.why == "no counterpart":
            return (
                f"the kernel hung: {cmd} ran past {own:.0f} s (the load step's bound: a step with no counterpart on "
                f"the reference side); {killed}"
            )
        if hung:
            return f"the kernel hung: {cmd} ran past {own:.0f} s ({yardstick}); {killed}"
        if exc.kind == "timeout":
            return (
                f"timed out after {self.deadline.timeout_s:.0f} s during {cmd}; "
                "the candidate's process group was killed"
            )
        tail = self.worker.log_tail(600) if exc.kind == "died" else ""
        return f"{exc} (during {cmd})" + (f"\n{tail}" if tail else "")

    def warm_up(self, device: str) -> Reply:
        return self._ask(Command.WARM_UP, device=device)

    def set_problem(self, source: str) -> Reply:
        return self._ask(Command.SET_PROBLEM, source=source)

    def load(
        self,
        *,
        kernel_path: str,
        device: str,
        init_path: str,
        extensions_dir: str,
        suffix: str,
        gpu_memory_fraction: float,
    ) -> Reply:
        return self._ask(
            Command.LOAD,
            kernel_path=kernel_path,
            device=device,
            init_path=init_path,
            extensions_dir=extensions_dir,
            suffix=suffix,
            gpu_memory_fraction=gpu_memory_fraction,
        )

    def extensions_dir(self, path: str) -> Reply:
        return self._ask(Command.EXTENSIONS_DIR, path=path)

    def load_params(self, path: str) -> Reply:
        return self._ask(Command.LOAD_PARAMS, path=path)

    def probe_handover(self, fd_socket: int | None = None) -> Reply:
        if fd_socket is None:
            return self._ask(Command.PROBE_HANDOVER)
        return self._ask(Command.PROBE_HANDOVER, fd_socket=fd_socket)

    def use_handover(self, handover: str) -> Reply:
        return self._ask(Command.USE_HANDOVER, handover=handover)

    def run(
        self,
        *,
        seed: int,
        scale: float | str,
        out_path: str,
        poison: float,
        poison_bytes: int,
        max_output_bytes: int,
        refill_seed: int | None = None,
    ) -> Reply:
        fields: dict[str, Any] = {} if refill_seed is None else {"refill_seed": refill_seed}
        return self._ask(
            Command.RUN,
            seed=seed,
            scale=scale,
            out_path=out_path,
            poison=poison,
            poison_bytes=poison_bytes,
            max_output_bytes=max_output_bytes,
            **fields,
        )

    def release(self, *, empty_cache: bool = False) -> Reply:
        if empty_cache:
            return self._ask(Command.RELEASE, empty_cache=True)
        return self._ask(Command.RELEASE)

    def integrity(self) -> Reply:
        return self._ask(Command.INTEGRITY)

    def timing_setup(self, *, seeds: list[int], warmup: int, lead_us: float) -> Reply:
        return self._ask(Command.TIMING_SETUP, seeds=seeds, warmup=warmup, lead_us=lead_us)

    def memory(self) -> Reply:
        return self._ask(Command.MEMORY)

    def launched_kernels(self, trace_path: str | None = None) -> Reply:
        return self._ask(Command.LAUNCHED_KERNELS, trace_path=trace_path)

    def time_block(self, *, n: int, offset: int, paper: bool = False) -> Reply:
        return self._ask(Command.TIME_BLOCK, n=n, offset=offset, paper=paper)

    def save_kept(self, paths: dict[str, str]) -> Reply:
        return self._ask(Command.SAVE_KEPT, paths=paths)

    def time_fresh(self, *, seeds: list[int], paths: list[str], start: int) -> Reply:
        return self._ask(Command.TIME_FRESH, seeds=seeds, paths=paths, start=start)
