"""What the bundle replay simulates (replay_sim.py): segments of uncontended work in roles, evaluations (jobs)
made of them, and the policy that says how each role holds the GPU. Standard library only."""

from __future__ import annotations

import math
from dataclasses import dataclass

# "pair_end": a later pair's start's first part, the old pair ending with the declaration held whole (the cut
# comes once it is gone: gpu_holds.declaration_cut after bring_up.end_pair)
CPU_ROLES = frozenset({"spawn", "prep", "pair_end", "pair_start", "shutdown", "compile"})
SHARED_ROLES = frozenset({"correctness", "setup", "recheck", "checks", "profile"})
LOOP_ROLES = frozenset({"loop", "loop_other"})
TIMING_ROLES = frozenset({"setup", "loop", "loop_other", "recheck", "checks"})
# "placement" ... "placement_end": a one-pair evaluation's later pairs, run only when its first pair was placed
# beside others (Policy.placement_beside_gib; replay_jobs.with_placement_pairs)
MARKERS = frozenset({"admit_start", "admit", "release", "cut", "placement", "placement_end"})
EPS = 1e-9
# The GPU's capacity for shared work, in GPUs (without MPS, contexts of different processes take turns); the host's
# for start-ups and other host work, in start-ups at full speed; the seconds a timer granted the device waits for
# shared commands in flight. The last two fitted to the 2026-12-04 H200 rows (replay_bundle.py --calibrate;
# benchmarks/results/replay.md).
SHARED_PARALLELISM = 1.0
CPU_PARALLELISM = 6.0
DRAIN_S = 1.5
GRACE_S = 30.0  # evaluator/runner.py GRACE_SECONDS: the backstop that kills an evaluation past its timeout


@dataclass
class Segment:
    role: str
    work: float = 0.0
    gpu_s: float = 0.0  # of its work, seconds the GPU computes (shared roles)

    def gpu_share(self) -> float:
        return min(1.0, self.gpu_s / self.work) if self.work > EPS else 0.0


def stretch(shares: list[float], parallelism: float) -> float:
    """The factor s >= 1 by which GPU work stretches when segments with these GPU shares run at once: the demand
    sum(g / (1 - g + g s)) equals `parallelism` (1 when it fits without stretching)."""
    if sum(shares) <= parallelism:
        return 1.0
    low, high = 1.0, 2.0
    while sum(g / (1 - g + g * high) for g in shares) > parallelism:
        low, high = high, high * 2
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if sum(g / (1 - g + g * mid) for g in shares) > parallelism else (low, mid)
    return high


def shared_rate(share: float, factor: float) -> float:
    return 1.0 / (1.0 - share + share * factor)


@dataclass
class Job:
    """One evaluation: its class, declared memory, start-up work and the segments after it (from `admit` to
    `release`). `compile_s` > 0: a load_inline kernel, built first by a compile job and queued when built."""

    key: str
    cls: str
    declared: int
    footprint: int | None
    spawn: float
    segments: list[Segment]
    pairs: int = 1
    compile_s: float = 0.0
    # Of its first pair's timed loop, the share a later pair repeats: a later pair times the TF32 baseline and the
    # candidate, not the FP32 baseline (timing_phase._time_pair); replay_jobs.Source sets it from the sweeps.
    later_loop_share: float = 1.0
    # What a process pair holds while it starts (declared_memory.start_bytes): a later pair's start cuts the declaration
    # to it (Policy.pair_start_memory "cut"); replay_jobs.Source sets it from the problem's parameters.
    start_bytes: int = 0


@dataclass
class Policy:
    slots: int = 8
    gpus: int = 1
    prestart: bool = True
    exclusive: str = "loops"  # "loops": timed loops only; "timing": the whole timing phase (before 2026-12-04)
    alone_above_mb: float = 0.0  # > 0: a problem whose input set and output pass this holds the GPU alone throughout
    capacity: int | None = None  # bytes evaluations may declare per GPU; None: no memory admission
    # gpu_memory.MemoryLedger's patience: once a declaration has waited this long, later ones are not admitted
    # before it (math.inf: any that fits passes it, as before 2026-12-06)
    memory_patience_s: float = math.inf
    shared_parallelism: float = SHARED_PARALLELISM
    cpu_parallelism: float = CPU_PARALLELISM
    deadline: float = math.inf  # no evaluation starts after this (bundle_gpu.py --deadline)
    timeout: float = 300.0
    compile_jobs: int = 4
    multi_pair_loop_scale: float = 1.0  # the timing budget: exclusive time of evaluations with several pairs
    correctness_scale: float = 1.0
    # protocol.Options.placement_pairs: a problem timed in one pair gets this many when others held device memory as
    # its first pair placed its buffers, which in a bundle of several slots is nearly always: each later pair costs
    # a pair start (the reference rebuilt in fresh workers, later_pair_start_s beyond its build) and its own timing.
    # 1: the rows' policy (every run before 2026-12-05).
    placement_pairs: int = 1
    # protocol.Options.placement_beside_gib: the later pairs only when the others admitted as the first pair's
    # set-up began declared at least this much (0: any other evaluation admitted)
    placement_beside_gib: float = 0.0
    later_pair_start_s: float = 10.0  # replay_jobs.Source sets the rows' median
    later_pair_end_s: float = 0.0  # the old pair's end before it (the rows' median where they time it apart)
    # A later pair's start with the evaluation's declaration "held" whole (every run before 2026-12-06) or "cut" to
    # what the start holds and grown back after it once it fits (gpu_holds.declaration_cut; never held back).
    pair_start_memory: str = "held"
    # The first pair's admission: "after_build", the declaration admitted once the reference is built (every run
    # before 2026-12-06 afternoon); "start", what a start holds (start_bytes) admitted before the workers touch the
    # device and grown to the declaration after the build (12-06 afternoon: two whole-device evaluations whose
    # starts were both admitted waited for each other); "before_build", the whole declaration admitted before the
    # workers touch the device (gpu_holds.memory since).
    first_memory: str = "after_build"
    standby_s: float = 10.0  # a standby harness's start-up work (replay_work sets the rows' median)
    # A timer granted the device first waits for the shared commands in flight to end, the turnstile closed to new
    # ones meanwhile: the GPU serves neither (gpu_lock.py).
    drain_s: float = DRAIN_S
    # "command": the shared hold is taken around each worker command (today); "phase": around a whole shared phase
    # (before 2026-12-04), so a timer waits for every shared phase in progress to end.
    shared_holds: str = "command"

    def mode(self, job: Job, role: str) -> str:
        """How a segment holds the GPU: "cpu", "shared", "exclusive" (markers: "marker")."""
        if role in MARKERS:
            return "marker"
        alone = self.alone_above_mb > 0 and (job.footprint is None or job.footprint > self.alone_above_mb * 2**20)
        if alone and (role not in CPU_ROLES or role == "shutdown"):
            return "exclusive"  # the old rule: correctness to shutdown alone (later pairs start with it given back)
        if role in CPU_ROLES:
            return "cpu"
        if role in LOOP_ROLES or (self.exclusive == "timing" and role in TIMING_ROLES):
            return "exclusive"
        return "shared"
