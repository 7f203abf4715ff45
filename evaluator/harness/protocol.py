"""The evaluation spec and options, and the result record (docs/protocol.md section 8, defined in record.py).

No torch here: `evaluator.runner` (the Django side) imports only this module (and record.py) from the harness.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from evaluator.harness.environ import ENV_PASSTHROUGH
from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.record import (
    CHECK_NAMES,
    DISTRIBUTIONS,
    HARNESS_VERSION,
    KNOWN_CHECKS,
    SCHEMA_VERSION,
    STATUSES,
    Check,
    CheckName,
    Distribution,
    LaunchedKernels,
    Memory,
    Record,
    SpeedOfLight,
    Timing,
    TimingSide,
    dumps,
    finite_json,
)
from evaluator.harness.record_fields import _Part

__all__ = [  # the record type's names and the environment's allow-list, re-exported for callers of this module
    "CHECK_NAMES",
    "ENV_PASSTHROUGH",
    "DISTRIBUTIONS",
    "HARNESS_VERSION",
    "KNOWN_CHECKS",
    "SCHEMA_VERSION",
    "STATUSES",
    "Check",
    "CheckName",
    "Distribution",
    "LaunchedKernels",
    "Memory",
    "Record",
    "SpeedOfLight",
    "Timing",
    "TimingSide",
]


# A failed hard check means the kernel tried to cheat the harness (or cannot be trusted): status "rejected".
HARD_CHECKS = frozenset(
    {"output_plain_tensor", "output_no_alias", "inputs_unchanged", "timer_integrity", "thread_count", "refilled_inputs"}
)
VERIFIED_TOLERANCE = 1e-3  # atol = rtol, the paper's fp32 choice
STANDARD_TOLERANCE = 1e-2  # what published KernelBench numbers used
# Half-precision problems (the reference's output is fp16 or bf16, so its own rounding is that coarse): a gate's
# atol = rtol is raised to this floor for that dtype. torch.testing.assert_close allows about one unit in the last
# place for one operator (fp16 rtol 1e-3, bf16 1.6e-2); a problem chains operators, so fp16 gets about ten (1e-2)
# and bf16, whose unit is already 8x coarser (7.8e-3), about two and a half (2e-2). fp32 and fp64 keep the gate's own.
HALF_PRECISION_TOLERANCE = {"float16": 1e-2, "bfloat16": 2e-2}


def tolerance_for(dtype: str, tol: float) -> float:
    """atol = rtol for an output of `dtype` ("float16", "torch.bfloat16", ...) under a gate of tolerance `tol`."""
    return max(tol, HALF_PRECISION_TOLERANCE.get(dtype.replace("torch.", ""), tol))


# Elements per chunk when an output is compared with its reference (workers/compare.py): the comparison's temporaries
# (about five chunks of float32 at once) are bounded by it, and the reference worker's memory declaration counts them
# (orchestrator/declared_memory.py). 64 MiB of float32: at 512 MiB a 0.5 GiB output's comparison held 2.5 GiB, the
# larger part of what a reference worker of L1/77 held at its most on an H100 (benchmarks/results/
# declared-vs-reserved-h100-2026-12-07.md).
COMPARE_CHUNK_ELEMENTS = 1 << 24


# Where a precision miss ends and evidence of cheating begins (docs/protocol.md, section 2, "one criterion"). A failed
# comparison is *precision-sized* when every element is within PRECISION_MARGIN times its allowance atol + rtol*|ref|
# (for fp32 at 1e-3 that is 1e-2: the standard protocol's own tolerance) and every NaN/Inf sits where the reference
# has the same one. A change of precision or summation order (TF32 against FP32: 1.07-1.26x on the H200; bf16
# internally: a few times) stays far inside it; a stale, constant or garbage output (another input set's result,
# zeros, uninitialised memory) is off by O(1) against a 1e-3 allowance, hundreds of times beyond it. How many elements
# miss is reported but is not part of the line: lower-precision arithmetic can move any share of them by a
# precision-sized amount, and an output from the wrong inputs moves most of them by far more.
PRECISION_MARGIN = 10.0


def precision_sized(result: dict[str, Any]) -> bool:
    """A failed comparison (workers/compare.py) that a change of precision explains: a plain tensor of the right shape
    and dtype, NaN/Inf only where the reference has them, and its worst element within PRECISION_MARGIN x its
    allowance. False for a comparison that passed, or one without element-wise figures."""
    ratio = result.get("worst_ratio")
    return (
        result.get("passed") is False
        and result.get("plain") is True
        and result.get("shape_dtype") is True
        and not result.get("nonfinite_mismatch")
        and isinstance(ratio, int | float)
        and ratio <= PRECISION_MARGIN
    )


def miss_kind(result: dict[str, Any]) -> str:
    """How a comparison ended: "passed", "precision" (a precision-sized miss: `incorrect` wherever it is found) or
    "beyond" (beyond anything precision explains: where the same kernel passed untimed, evidence of cheating)."""
    if result.get("passed"):
        return "passed"
    return "precision" if precision_sized(result) else "beyond"


# Beyond D1-D4 (which scale whole tensors, so torch.rand inputs stay all-positive or all-negative): one trial whose
# float inputs are positive but for a few random negated elements, so probing a few elements cannot pick
# a sign-specific path that is right for the whole tensor (B7).
MIXED_SIGNS = "mixed"
EXCESSIVE_SPEEDUP = 10.0

PAPER_LOOP_CALLS = 100  # KernelBench's fixed trial count
# Derived from the record type (evaluator/harness/record.py), the one place the fields are listed.
REQUIRED_KEYS = Record.required_keys()
DISTRIBUTION_KEYS = Distribution.keys()
TIMING_SIDE_KEYS = TimingSide.keys()


@dataclass
class Options:
    """Knobs of one evaluation. Defaults follow docs/protocol.md; `quick` shrinks counts for tests and demos."""

    quick: bool = False
    compile_baseline: bool = False
    hardware: str = ""
    randomise_params: bool = True
    compile_only: bool = False  # build (and cache) the kernel, then stop: used to parallelise compiles
    standard_trials: int = 5
    verified_trials: int = 2
    min_calls: int = 100
    min_timed_ms: float = 300.0  # ...or this much timed time per side, whichever comes first (timing.enough_calls)
    max_calls: int = 2000
    block_calls: int = 10
    warmup_calls: int = 5
    input_sets: int = 3
    rse_target: float = 0.005
    # The timed loops of all process pairs together stop on this budget once their minimum calls are in (a pair's
    # share: pair_policy.pair_budget_s): launch-bound evaluations spent 10 s of a 60 s budget in three or four
    # pairs on the H200, each held alone, for intervals their pairs' spread, not their calls, decided.
    timing_budget_s: float = 5.0
    host_memory_mb: int = 0  # 0: half of the machine's memory, at least 2 GiB
    gpu_memory_fraction: float = 0.45  # per worker: baseline and candidate share one GPU
    file_size_mb: int = 16384
    max_output_mb: int = 16384
    keep_workdir: bool = False
    gpu_lock_dir: str = ""  # set: evaluations sharing a GPU take turns for timing (gpu_lock.py)
    # Evaluations on one GPU are admitted by memory (gpu_memory.py, orchestrator/gpu_holds.py): each declares what
    # its workers will hold (from the meta-device footprint, or gpu_memory_reserve_mb) and waits until that fits in
    # gpu_memory_budget_mb (0: the device's total x gpu_memory_budget_fraction; on the CPU no admission unless set).
    gpu_memory_budget_mb: float = 0.0
    gpu_memory_budget_fraction: float = 0.9
    gpu_memory_reserve_mb: float = 0.0
    # Others that fit pass a declaration that does not, until it has waited this long; later arrivals then wait
    # behind it, so a whole-device declaration is not starved by small ones (gpu_memory.py; replay.md chose it).
    gpu_memory_patience_s: float = 60.0
    paper_loop: bool = False  # also time KernelBench's fixed no-flush loop on both sides, for comparison only
    # The kernel's disks (sandbox/disk.py), each a filesystem with a hard cap on bytes and on files and folders:
    # its work folder (outputs in io/, its extension builds) and its /tmp, /var/tmp and /dev/shm together.
    work_dir_mb: int = 8192
    work_dir_files: int = 50_000
    tmp_mb: int = 1024
    tmp_files: int = 50_000
    # The compile cache keeps at most this much of one kernel's build products (bytes, and files and folders), and
    # at most compile_cache_max_mb and compile_cache_max_files in all (least recently used entries go first:
    # compile_cache.evict).
    compile_cache_entry_mb: int = 512
    compile_cache_entry_files: int = 4096
    compile_cache_max_mb: int = 16384
    # Build the kernel from its source, neither reading nor filling the compile cache: a cached build is what an
    # earlier evaluation of the same source left (and its kernel could add to), so re-runs and reproductions, which
    # must be independent evidence, never use it. The record says "not used" (environment.compile_cache).
    build_from_source: bool = False
    compile_cache_max_files: int = 200_000
    # A candidate call that runs past hang_factor x the reference's slowest step + hang_grace_s is a hang: the
    # evaluation ends as a timeout then (and frees the GPU), not after the whole harness timeout.
    hang_factor: float = 20.0
    hang_grace_s: float = 30.0
    # The load step (import, extension build, __init__, and each worker's first forward and timing set-up, where a
    # kernel may compile) has a bound of its own, well under the harness timeout: load_cold_timeout_s when the
    # kernel's build is not in the compile cache (an H200 load_inline build takes about 47 s), load_timeout_s on a
    # hit. Past it the evaluation ends as a timeout and frees its worker.
    load_timeout_s: float = 120.0
    load_cold_timeout_s: float = 420.0
    # Short problems: the same kernel can time 15 % apart in two processes, because the host's
    # latency to a call's first kernel (26-71 us on the H200) lands inside the events and differs from process to
    # process (benchmarks/results/timing-spread-h200.md). So when the baseline's median is below pairs_below_ms the
    # timing phase runs again in process_pairs fresh worker pairs, and in more (up to max_process_pairs) while the
    # pairs' speedups spread by more than pair_agreement of the pooled one; the interval is bootstrapped over
    # pairs' log speedups, a deviant pair set aside (timing_phase.py, pair_interval.log_ratio_interval).
    process_pairs: int = 2
    max_process_pairs: int = 4
    pair_agreement: float = 0.03
    pairs_below_ms: float = 1.0
    # Launch-bound calls (CUDA) get process pairs too, whatever their length: a call whose host time is at least
    # host_bound_fraction of its event time runs at its process's host speed, which differed by up to 40 % between
    # processes for one L3 problem on the H200 (benchmarks/results/process-pairs-h200.md).
    host_bound_fraction: float = 0.5
    # ... and start with launch_bound_pairs of them: with a between-process spread like L3/20's, two pairs agree
    # within pair_agreement by chance about one time in ten and their interval then misses; three cover 95 %
    # (benchmarks/pairs_coverage_sim.py, results in process-pairs-h200.md).
    launch_bound_pairs: int = 3
    # A problem otherwise timed in one pair gets placement_pairs of them when other evaluations held memory on the
    # device while its first pair placed its buffers: the same processes that agree within 0.04 % alone ran a 3D
    # transposed convolution (L1/68) 6 % slower when another process held 68-132 GiB as their buffers were placed,
    # and stayed slow after it let go (benchmarks/results/placement-h200.md). Which side lands slow is chance, so
    # one pair cannot see it; a second pair, placed later beside other neighbours, samples it (1: off).
    placement_pairs: int = 2
    # ... and only when those evaluations' declarations came to at least placement_beside_gib (0: any neighbour).
    # The +6 % showed beside 68-132 GiB on the H200 and not beside 16-60 GiB on an H100; where it begins on the H200
    # is not measured yet (benchmarks/policy_sample_gpu.sh, part hog), so the default keeps a second pair for any
    # neighbour. The replay prices the threshold: benchmarks/results/replay.md.
    placement_beside_gib: float = 0.0
    # A figure whose interval from its pairs is wider than unstable_width (high / low; a deviant pair set aside) is
    # recorded but not ranked: `timing.unstable`, check timing_stable (pair_interval.interval_unstable).
    unstable_width: float = 2.0
    # A pair's timed blocks also stop once its speedup's 95 % half-width (log scale, from both medians' robust
    # errors) is at most ci_target: the calls buy the ratio's precision, not each side's (0: rse_target alone).
    ci_target: float = 0.02
    # Blocks of short calls last at least target_block_ms on the orchestrator's clock (at most max_block_calls
    # calls), so the wall-clock cross-check's 2 ms-per-block allowance is a small fraction of a call.
    target_block_ms: float = 20.0
    # Before each timed CUDA call a kernel holds every SM for launch_lead_us while the call is launched, so the
    # host's latency to its first kernel is not timed (lead.py); 0: the start event fires on an idle GPU.
    launch_lead_us: float = 100.0
    max_block_calls: int = 1000
    # CUDA: both workers time on one leased CPU (cpu_pin.py), so a launch-bound call meets the same host speed on
    # both sides; the H200's vCPUs each changed speed by up to 2x from one moment to the next.
    pin_timing_cpu: bool = True
    # Set (a folder the orchestrator may write): the profiled calls of "what ran" also write torch.profiler Chrome
    # traces, copied there as candidate-trace.json and baseline-trace.json (a staff profile request; CUDA only).
    profile_dir: str = ""
    # Set (64 hex digits, seeds.py): every secret seed derives from this master seed instead of a fresh one; only a
    # reproduction of a verdict whose seeds were revealed passes it (manage.py reproduce, --seeds).
    seeds: str = ""

    @classmethod
    def build(cls, options: dict[str, Any] | None = None) -> Options:
        """Defaults, then `quick` presets, then explicit keys (unknown keys are an error: typos must not pass)."""
        options = dict(options or {})
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown harness options: {sorted(unknown)}")
        opts = cls(quick=bool(options.get("quick", False)))
        if opts.quick:
            opts.standard_trials = 2
            opts.min_calls = 10
            opts.max_calls = 60
            opts.block_calls = 5
            opts.warmup_calls = 2
            opts.input_sets = 2
            opts.timing_budget_s = 1.0
            opts.rse_target = 0.02
            opts.process_pairs = 1  # fast; the two-pair path is asked for explicitly
            opts.launch_bound_pairs = 1
            opts.placement_pairs = 1
        for key, value in options.items():
            setattr(opts, key, value)
        if opts.verified_trials < 2:
            raise ValueError("the protocol needs at least two trials per distribution")
        return opts


@dataclass
class Spec:
    """Everything the harness process needs: file paths, device, limits and options."""

    problem_path: str
    kernel_path: str
    device: str = "cpu"
    timeout: float = 900.0
    work_dir: str = ""
    compile_cache_dir: str = ""
    python: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Spec:
        return cls(**json.loads(text))


def empty_timing_side() -> dict[str, Any]:
    return TimingSide().to_dict()


def empty_distribution(name: str) -> dict[str, Any]:
    return Distribution(name=name).to_dict()


def empty_result() -> dict[str, Any]:
    """A record with every required key, nothing measured yet (the dict form of `Record()`, which an evaluation
    starts from)."""
    return Record().to_dict()


class InvalidRecord(HarnessInfraError):
    """The harness built a record of another shape than record.py names: a bug of the harness, never the kernel's
    doing, so the evaluation ends as an infrastructure error and the record is not printed."""


def result_to_json(record: dict[str, Any] | Record) -> str:
    """The record the harness prints: one line of strict JSON, once it passes `Record.from_dict(closed=True)`
    (every key and check name one that record.py names). Raises InvalidRecord when it does not."""
    data = finite_json(record.to_dict() if isinstance(record, Record) else record)
    try:
        Record.from_dict(data, closed=True)
    except ValueError as exc:
        raise InvalidRecord(f"the harness built an invalid result record (a harness bug): {exc}") from exc
    return dumps(data)


P = TypeVar("P", bound=_Part)


def part(cls: type[P], data: dict[str, Any]) -> P:
    """One part of the record from the dict the harness built it as (the timing part, the launched kernels): parsed
    closed, like the whole record before it is printed, so a key record.py does not name is still our bug
    (InvalidRecord), not a value silently dropped."""
    try:
        return cls.from_dict(finite_json(data), closed=True)
    except ValueError as exc:
        raise InvalidRecord(f"the harness built an invalid result record (a harness bug): {exc}") from exc


def result_from_json(text: str) -> dict[str, Any]:
    """Parse and validate a record; raises ValueError when it is not one."""
    record: dict[str, Any] = json.loads(text)  # a dict once validate_result accepts it
    validate_result(record)
    return record


def validate_result(record: Any) -> Record:
    """Raise ValueError unless `record` has the shape of docs/protocol.md section 8 (types, not values); return it
    typed."""
    return Record.from_dict(record)


def get_check(record: dict[str, Any], name: CheckName) -> dict[str, Any] | None:
    """One check of a printed record read back as JSON (the harness's own record: `Record.check`)."""
    return next((c for c in record["checks"] if c["name"] == name), None)


def shorten(text: str, limit: int = 1200) -> str:
    """Head and tail of a long log: errors must stay short."""
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"
