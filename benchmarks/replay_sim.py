"""The discrete-event simulation behind replay_bundle.py: a bundle's evaluations through GPU slots, the memory
ledger and the GPU lock, as the harness shares one GPU (orchestrator/gpu_holds.py, gpu_memory.py, gpu_lock.py;
benchmarks/bundle_gpu.py for the slots, standby harnesses and compile jobs). Standard library only, and the
harness's own rule for placement pairs (pair_policy.placed_beside_enough, stdlib only like the orchestrator).

An evaluation is a list of segments, each some seconds of uncontended work in one role (replay_work.py makes them
from a GPU run's rows). The policy decides how each role holds the GPU:
- CPU roles (worker start-up, building the reference, a later pair's start, shutdown, compile jobs) hold nothing and
  share the host: n of them at once each run at min(1, cpu_parallelism / n);
- shared roles (correctness, timing set-up, re-checks, the fresh probe, profiling) run beside each other, and not
  at all while a timer holds or waits for the device (the turnstile). Each spends a fraction g of its time on the
  GPU (its calls, Segment.gpu_s) and the rest on its host; while the GPU demand of all of them passes
  shared_parallelism (in GPUs: 1 when contexts only take turns), their GPU parts stretch by the factor s that
  keeps the demand there, so one runs at 1 / (1 - g + g s): a GPU-bound correctness phase four at once takes four
  times as long (measured: L1/68, 6 s alone, 25 s four at once), a host-bound one hardly longer;
- exclusive roles (the timed loops; under the older rules more) are served one at a time, first come first served.
Memory is admitted by declaration before correctness (Policy.first_memory "start": what a start holds first, before
building the reference, then grown to the declaration) and held until the workers are gone; a declaration that does
not fit waits until it does (or until the device is empty), and others that fit may pass it, as they do polling
the ledger. Between events every rate is constant, so the simulation advances from one event to the next exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from benchmarks.replay_model import EPS, GRACE_S, MARKERS, Job, Policy, shared_rate, stretch
from evaluator.harness.orchestrator.pair_policy import placed_beside_enough


@dataclass
class Outcome:
    key: str
    cls: str
    status: str = "not_started"
    start: float | None = None
    end: float | None = None
    memory_wait: float = 0.0
    lock_wait: float = 0.0  # queued for the exclusive hold, or a shared segment stopped by the turnstile
    exclusive: float = 0.0
    loops: float = 0.0
    slot: int | None = None


@dataclass
class _Run:
    job: Job
    out: Outcome
    gpu: int
    slot: int
    index: int = -1
    left: float = 0.0
    state: str = "run"  # run, memory, lock, standby
    mode: str = "cpu"
    holds: bool = False
    memory: bool = False  # admitted (counted on its GPU)
    holding: int = 0  # bytes of its declaration counted now (less while a later pair's start cuts it)
    kill_at: float = math.inf
    drain: float = 0.0  # seconds left of waiting for the shared commands in flight, once granted the device
    begun: bool = False  # its shared segment has run (a phase-long shared hold is then held until it ends)
    standby: list[float] | None = None  # the standby it waits for ([work left])
    waiting_since: float = math.inf  # when it began to wait for memory
    beside: tuple[int, int] | None = None  # (others admitted, their bytes) as its first set-up began: its placement


@dataclass
class _Gpu:
    holder: _Run | None = None
    queue: list[_Run] = field(default_factory=list)
    waiting: list[_Run] = field(default_factory=list)  # for memory
    held: int = 0
    admitted: int = 0
    busy: float = 0.0
    exclusive: float = 0.0
    loops: float = 0.0
    drain: float = 0.0


class Simulation:
    def __init__(self, jobs: list[Job], policy: Policy) -> None:
        self.p = policy
        self.t = 0.0
        self.queue: list[Job] = [j for j in jobs if j.compile_s <= 0]
        self.to_build: list[list[Job]] = []  # a kernel is built once, then all its evaluations are queued
        for job in (j for j in jobs if j.compile_s > 0):
            same = next((group for group in self.to_build if group[0].key == job.key), None)
            if same is None:
                self.to_build.append([job])
            else:
                same.append(job)
        self.building: list[tuple[list[Job], list[float]]] = []
        self.outcomes = {id(j): Outcome(j.key, j.cls) for j in jobs}
        self.gpus = [_Gpu() for _ in range(policy.gpus)]
        self.slots: list[_Run | None] = [None] * (policy.slots * policy.gpus)
        self.standbys: list[list[float] | None] = [None] * len(self.slots)
        self.runs: list[_Run] = []
        # What happened, for the invariants (tests): ("exclusive", gpu, key, start, end) for each stretch a timer held
        # the device, ("memory", gpu, time, bytes declared by those admitted) after each admission and release.
        self.trace: list[tuple[Any, ...]] = []
        self.placed_again = 0  # one-pair evaluations whose later (placement) pairs ran

    # --- moving a run along its segments -----------------------------------------------------------------------

    def _enter(self, run: _Run) -> None:
        """Step `run` to its next segment, through markers and empty segments, until it has work or waits."""
        gpu = self.gpus[run.gpu]
        while True:
            run.index += 1
            if run.index >= len(run.job.segments):
                self._finish(run, "ok")
                return
            seg = run.job.segments[run.index]
            mode = self.p.mode(run.job, seg.role)
            if seg.role in ("admit_start", "admit"):
                # an admitted run growing back after a cut is not held back: it holds a place the waiters need
                held_back = not run.memory and self._held_back(gpu, self.t)
                if self.p.capacity is None or (self._fits(gpu, run) and not held_back):
                    self._admit(gpu, run)
                    continue
                run.state, run.waiting_since = "memory", self.t
                gpu.waiting.append(run)
                return
            if seg.role == "release":
                self._free_memory(run)
                continue
            if seg.role == "cut":
                self._cut(run)
                continue
            if seg.role == "placement":
                # the harness's rule over those admitted as its first set-up began (without memory admission
                # nobody is counted: one pair, as in the harness without a ledger)
                if not placed_beside_enough(run.beside or (0, 0), self.p.placement_beside_gib):
                    segments = run.job.segments
                    run.index = next(i for i in range(run.index, len(segments)) if segments[i].role == "placement_end")
                    continue
                self.placed_again += 1
            if seg.role in MARKERS:
                continue
            if seg.role == "setup" and run.beside is None:
                run.beside = (gpu.admitted - (1 if run.memory else 0), gpu.held - run.holding)
            if mode != "exclusive" and run.holds:
                self._give_back(run)
            if run.begun:
                run.begun = False
                self._grant(gpu)
            run.mode, run.left, run.state = mode, seg.work, "run"
            if mode == "exclusive" and not run.holds:
                # Shared commands of others in flight when it asks (the device open to them: no timer holds or
                # waits) are waited for once granted; asking behind another timer, there are none.
                open_ = gpu.holder is None and not gpu.queue
                busy = any(r.gpu == run.gpu and r.state == "run" and r.mode == "shared" for r in self.runs)
                run.drain = self.p.drain_s if open_ and busy and self.p.shared_holds == "command" else 0.0
                run.state = "lock"
                gpu.queue.append(run)
                self._grant(gpu)
            if run.left > EPS or run.drain > EPS or run.state != "run":
                return

    def _fits(self, gpu: _Gpu, run: _Run) -> bool:
        """Does the run's whole declaration fit (beside nobody else it always does)? An admitted run whose
        declaration was cut grows back under the same rule."""
        assert self.p.capacity is not None
        others = gpu.admitted - (1 if run.memory else 0)
        return others == 0 or gpu.held - run.holding + self._wanted(run) <= self.p.capacity

    def _declared(self, job: Job) -> int:
        assert self.p.capacity is not None
        return min(job.declared, self.p.capacity)

    def _wanted(self, run: _Run) -> int:
        """What the run's admission at its current marker asks for: a start's bytes, or its whole declaration."""
        whole = self._declared(run.job)
        at_start = 0 <= run.index < len(run.job.segments) and run.job.segments[run.index].role == "admit_start"
        return min(run.job.start_bytes, whole) if at_start else whole

    def _held_back(self, gpu: _Gpu, since: float) -> bool:
        """Does a waiter that began to wait before `since` wait longer than the ledger's patience (gpu_memory.py:
        later arrivals are then not admitted until it is)?"""
        return any(w.waiting_since < since and self.t - w.waiting_since > self.p.memory_patience_s for w in gpu.waiting)

    def _admit(self, gpu: _Gpu, run: _Run) -> None:
        """Count what the run asks for (a start's bytes; its whole declaration: a first admission, growing after
        its start, or growing back after a cut)."""
        if self.p.capacity is not None:
            want = self._wanted(run)
            gpu.held += want - run.holding
            gpu.admitted += 0 if run.memory else 1
            run.memory, run.holding = True, want
            self.trace.append(("memory", run.gpu, self.t, gpu.held, gpu.admitted))

    def _free_memory(self, run: _Run) -> None:
        if not run.memory:
            return
        gpu = self.gpus[run.gpu]
        gpu.held -= run.holding
        gpu.admitted -= 1
        run.memory, run.holding = False, 0
        self.trace.append(("memory", run.gpu, self.t, gpu.held, gpu.admitted))
        self._serve_waiters(gpu)

    def _cut(self, run: _Run) -> None:
        """A later pair's start: the declaration cut to what the start holds, the run still counted."""
        if not run.memory:
            return
        gpu = self.gpus[run.gpu]
        kept = min(run.job.start_bytes, run.holding)
        gpu.held -= run.holding - kept
        run.holding = kept
        self.trace.append(("memory", run.gpu, self.t, gpu.held, gpu.admitted))
        self._serve_waiters(gpu)

    def _serve_waiters(self, gpu: _Gpu) -> None:
        for waiter in list(gpu.waiting):  # every waiter polls: whoever fits now is admitted, in arrival order
            held_back = not waiter.memory and self._held_back(gpu, waiter.waiting_since)
            if waiter in gpu.waiting and self._fits(gpu, waiter) and not held_back:
                gpu.waiting.remove(waiter)
                self._admit(gpu, waiter)
                self._enter(waiter)

    def _grant(self, gpu: _Gpu) -> None:
        """The next timer takes the device once it is free (phase-long shared holds: once they have all ended)."""
        if self.p.shared_holds == "phase" and any(r.begun for r in self.runs if self.gpus[r.gpu] is gpu):
            return
        if gpu.holder is None and gpu.queue:
            run = gpu.queue.pop(0)
            gpu.holder, run.holds, run.state = run, True, "run"

    def _give_back(self, run: _Run) -> None:
        gpu = self.gpus[run.gpu]
        if gpu.holder is run:
            gpu.holder = None
        run.holds = False
        self._grant(gpu)

    def _finish(self, run: _Run, status: str) -> None:
        gpu = self.gpus[run.gpu]
        if run in gpu.queue:
            gpu.queue.remove(run)
        if run in gpu.waiting:
            gpu.waiting.remove(run)
        if run.holds:
            self._give_back(run)
        self._free_memory(run)
        run.out.status, run.out.end, run.state, run.begun = status, self.t, "done", False
        self.runs.remove(run)
        self.slots[run.slot] = None
        self._grant(gpu)

    # --- slots, standbys and compile jobs ------------------------------------------------------------------------

    def _fill(self) -> None:
        while len(self.building) < self.p.compile_jobs and self.to_build:
            group = self.to_build.pop(0)
            self.building.append((group, [group[0].compile_s]))
        for slot in range(len(self.slots)):
            while self.slots[slot] is None and self.queue:
                job = self.queue.pop(0)
                if self.t <= self.p.deadline:  # else not started (bundle_gpu.py logs it "skipped")
                    self._start(job, slot)

    def _start(self, job: Job, slot: int) -> _Run:
        out = self.outcomes[id(job)]
        out.start, out.status, out.slot = self.t, "running", slot
        run = _Run(job, out, gpu=slot // self.p.slots, slot=slot, kill_at=self.t + self.p.timeout + GRACE_S)
        self.slots[slot] = run
        self.runs.append(run)
        standby = self.standbys[slot]
        if self.p.prestart:  # the next evaluation's standby starts as this one does (runner._park_standby)
            self.standbys[slot] = [self.p.standby_s]
        if not self.p.prestart or standby is None:
            run.mode, run.left, run.state = "cpu", job.spawn, "run"
            if run.left <= EPS:
                self._enter(run)
        elif standby[0] > EPS:
            run.state, run.standby = "standby", standby
        else:
            self._enter(run)
        return run

    # --- rates and time ----------------------------------------------------------------------------------------

    def _rates(self) -> list[tuple[list[float] | _Run, float]]:
        """(what, rate) for everything making progress now: runs, standbys and builds ([work left])."""
        cpu: list[list[float] | _Run] = [r for r in self.runs if r.state == "run" and r.mode == "cpu"]
        standbys = [s for s in self.standbys if s is not None] + [r.standby for r in self.runs if r.standby]
        cpu += [s for s in standbys if s[0] > EPS] + [left for _, left in self.building]
        out = [(w, min(1.0, self.p.cpu_parallelism / len(cpu))) for w in cpu]
        for g, gpu in enumerate(self.gpus):
            # whoever the lock made a holder times alone (the lock's own rules keep that to one)
            out += [(r, 1.0) for r in self.runs if r.gpu == g and r.holds and r.state == "run"]
            shared = [r for r in self.runs if r.gpu == g and r.state == "run" and r.mode == "shared"]
            if gpu.holder is not None or gpu.queue:  # the turnstile: only holds already taken go on
                shared = [r for r in shared if r.begun] if self.p.shared_holds == "phase" else []
            shares = [r.job.segments[r.index].gpu_share() for r in shared]
            factor = stretch(shares, self.p.shared_parallelism)
            for run, share in zip(shared, shares, strict=True):
                run.begun = True
                out.append((run, shared_rate(share, factor)))
        return out

    def run(self) -> list[Outcome]:
        self._fill()
        while self.runs or self.queue or self.building or self.to_build:
            active = self._rates()
            dt = min((self._left(w) / rate for w, rate in active if rate > 0), default=math.inf)
            dt = min(dt, min((r.kill_at - self.t for r in self.runs), default=math.inf))
            if math.isinf(dt):
                raise RuntimeError("the simulation is stuck: nothing can make progress")
            self._account(active, max(dt, 0.0))
            self.t += max(dt, 0.0)
            for w, rate in active:
                self._advance(w, rate * max(dt, 0.0))
            self._settle()
        return list(self.outcomes.values())

    @staticmethod
    def _left(what: list[float] | _Run) -> float:
        if isinstance(what, list):
            return what[0]
        return what.drain if what.drain > EPS else what.left

    def _advance(self, what: list[float] | _Run, done: float) -> None:
        if isinstance(what, list):
            what[0] = max(what[0] - done, 0.0)
        elif what.drain > EPS:
            what.drain = max(what.drain - done, 0.0)
        else:
            what.left = max(what.left - done, 0.0)

    def _account(self, active: list[tuple[list[float] | _Run, float]], dt: float) -> None:
        runs = [w for w, _ in active if isinstance(w, _Run)]
        for g, gpu in enumerate(self.gpus):
            if gpu.holder is not None or any(r.gpu == g and r.mode == "shared" for r in runs):
                gpu.busy += dt
        for run in (r for r in runs if r.holds):
            gpu = self.gpus[run.gpu]
            if run.drain > EPS:
                run.out.lock_wait += dt
                gpu.drain += dt
                continue
            self.trace.append(("exclusive", run.gpu, run.job.key, self.t, self.t + dt))
            gpu.exclusive += dt
            run.out.exclusive += dt
            if run.job.segments[run.index].role == "loop":
                gpu.loops += dt
                run.out.loops += dt
        for run in self.runs:
            if run.state == "memory":
                run.out.memory_wait += dt
            elif run.state == "lock" or (run.mode == "shared" and run.state == "run" and run not in runs):
                run.out.lock_wait += dt

    def _settle(self) -> None:
        """Everything whose work is done moves on; builds join the queue; kills; free slots are filled."""
        for group, left in list(self.building):
            if left[0] <= EPS:
                self.building.remove((group, left))
                self.queue += group
        for run in list(self.runs):
            if run.state == "done" or run not in self.runs:
                continue
            if self.t >= run.kill_at - EPS:
                self._finish(run, "timeout")
            elif run.state == "standby" and run.standby is not None and run.standby[0] <= EPS:
                run.standby = None
                self._enter(run)
            elif run.state == "run" and run.left <= EPS and run.drain <= EPS:
                self._enter(run)
        self._fill()


def simulate(jobs: list[Job], policy: Policy, trace: list[Any] | None = None) -> tuple[list[Outcome], dict[str, float]]:
    """The outcome of every job (in the jobs' order) and the run's totals; `trace` receives Simulation.trace."""
    sim = Simulation(jobs, policy)
    outcomes = sim.run()
    if trace is not None:
        trace.extend(sim.trace)
    ends = [o.end for o in outcomes if o.end is not None]
    wall = max(ends, default=0.0)
    exclusive = sum(g.exclusive for g in sim.gpus)
    totals = {
        "wall_s": wall,
        "evaluated": float(sum(o.status != "not_started" for o in outcomes)),
        "exclusive_s": exclusive,
        "exclusive_timing_share": sum(g.loops for g in sim.gpus) / exclusive if exclusive else 0.0,
        "gpu_busy_fraction": sum(g.busy for g in sim.gpus) / (wall * len(sim.gpus)) if wall else 0.0,
        "gpu_exclusive_fraction": exclusive / (wall * len(sim.gpus)) if wall else 0.0,
        "gpu_drain_fraction": sum(g.drain for g in sim.gpus) / (wall * len(sim.gpus)) if wall else 0.0,
        "placement_pairs_run": float(sim.placed_again),
    }
    return outcomes, totals
