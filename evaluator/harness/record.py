"""The result record (docs/protocol.md section 8): its one definition, validation and JSON round trip.

The dataclasses below are the only place the record's fields are named. The harness fills a record as a plain dict
(`Record().to_dict()`, what `protocol.empty_result()` returns) and checks it with `Record.from_dict` before it
prints it; the Django side builds its own records (timeouts, crashes, demo data) as `Record(...)`, validates every
record before storing it, and pages read stored ones through `Record.from_stored`, which never raises.

Every key the harness writes is a field here, down to the timing part's process pairs and the launched kernels'
rows; the harness checks its record with `from_dict(..., closed=True)` before it prints it (protocol.result_to_json),
so a key written but not named here, or a check name outside CheckName, is a harness bug and ends the evaluation as
an infrastructure error instead of reaching the site. Readers are lenient the other way: keys a record holds beyond
these fields (stored records of other harness versions, demo data) are kept, unchanged, in each part's `extra`, so
a record survives `from_dict(...).to_dict()`. An optional field is written back when the record had it (null
included) or when it holds a value.

`schema_version` counts changes to the field list. Records stored before it existed carry none and read as
version 0, which differs from version 1 only by lacking the field.

No torch and no Django here: `evaluator.runner` and the Django apps import this module.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeVar, get_args

HARNESS_VERSION = "1.0.0"
SCHEMA_VERSION = 2

STATUSES = ("ok", "compile_error", "runtime_error", "timeout", "rejected")
DISTRIBUTIONS: tuple[tuple[str, float], ...] = (("D1", 1.0), ("D2", 3.0), ("D3", 0.01), ("D4", -1.0))
# Every anti-cheat check the harness may write (protocol.set_check refuses any other name).
CheckName = Literal[
    "output_plain_tensor",
    "output_no_alias",
    "inputs_unchanged",
    "output_shape_dtype",
    "timer_integrity",
    "wallclock_crosscheck",
    "timed_output_recheck",
    "determinism",
    "speedup_plausible",
    "params_randomised",
    "thread_count",
    "mixed_sign_inputs",
    "fresh_input_timing",  # only when the fresh-input probe ran (timing_record.fresh_input_check)
    "timing_stable",  # only with more than one process pair (timing_record.stability_check)
    "process_containment",  # only when the kernel's processes outlived its worker (a failure)
]
KNOWN_CHECKS: frozenset[str] = frozenset(get_args(CheckName))
# The checks every record lists from the start, in this order (the others are appended when they are set).
CHECK_NAMES: tuple[CheckName, ...] = (
    "output_plain_tensor",
    "output_no_alias",
    "inputs_unchanged",
    "output_shape_dtype",
    "timer_integrity",
    "wallclock_crosscheck",
    "timed_output_recheck",
    "determinism",
    "speedup_plausible",
    "params_randomised",
    "thread_count",
    "mixed_sign_inputs",
)
# Phases (seconds, evaluation.py, setup_phase.py, correctness_phase.py, timing_phase.py, verdict.py): these names,
# and one start and one timing loop per later process pair; counters (not seconds) are integers.
PHASE_NAMES = frozenset(
    {
        "start", "workers", "standby_workers", "compile", "compile_import", "correctness", "timing_setup",
        "timing_loop", "timing_checks", "timing", "shutdown", "total", "gpu_wait", "exclusive_s",
        "exclusive_timing_s", "exclusive_other_s",
    }
)  # fmt: skip
PHASE_PATTERN = re.compile(r"pair_\d+_start|timing_loop_pair_\d+")
PHASE_COUNTERS = frozenset({"pair_starts_under_exclusive_lock"})
# Top-level keys that travel beside a record from the harness to the site, which takes them out before it stores
# the record: the master seed (seeds.RECORD_KEY, evaluator/services/seeds.py).
TRANSIT_KEYS = frozenset({"seeds_master"})

# --- Field checkers: each returns an error message, or "" when the value is acceptable -------------------------


def _any(value: Any) -> str:
    return ""


def _is_num(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _opt_bool(value: Any) -> str:
    return "" if value is None or isinstance(value, bool) else "must be bool or null"


def _opt_num(value: Any) -> str:
    return "" if _is_num(value) else "must be a number or null"


def _text(value: Any) -> str:
    return "" if isinstance(value, str) else "must be a string"


def _mapping(value: Any) -> str:
    return "" if isinstance(value, dict) else "must be an object"


def _opt_mapping(value: Any) -> str:
    return "" if value is None or isinstance(value, dict) else "must be an object or null"


def _opt_text(value: Any) -> str:
    return "" if value is None or isinstance(value, str) else "must be a string or null"


def _opt_int(value: Any) -> str:
    ok = value is None or (isinstance(value, int) and not isinstance(value, bool))
    return "" if ok else "must be an integer or null"


def _texts(value: Any) -> str:
    ok = value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    return "" if ok else "must be a list of strings or null"


def _numbers(value: Any) -> str:
    """An object of numbers (or nulls) by name."""
    ok = value is None or (isinstance(value, dict) and all(_is_num(v) for v in value.values()))
    return "" if ok else "must be an object of numbers or null"


def _mappings(value: Any) -> str:
    ok = value is None or (isinstance(value, list) and all(isinstance(v, dict) for v in value))
    return "" if ok else "must be a list of objects or null"


def _phases(value: Any) -> str:
    """Seconds (or null) by phase name; counters are integers."""
    if not isinstance(value, dict):
        return "must be an object"
    bad = [k for k, v in value.items() if not _is_num(v)]
    bad += [k for k in PHASE_COUNTERS if k in value and _opt_int(value[k])]
    return f"must hold numbers (or null) only: {sorted(bad)}" if bad else ""


def _check_name(value: Any) -> str:
    return "" if value in KNOWN_CHECKS else f"{value!r} is not a check name (record.CheckName)"


def _status(value: Any) -> str:
    return "" if value in STATUSES else f"{value!r} not in {STATUSES}"


def _interval(value: Any) -> str:
    ok = value is None or (isinstance(value, list) and len(value) == 2 and all(_is_num(v) for v in value))
    return "" if ok else "must be [low, high] or null"


def _version(value: Any) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return "must be a non-negative integer"
    return f"{value} is newer than this code's {SCHEMA_VERSION}" if value > SCHEMA_VERSION else ""


def _spec(
    check: Callable[[Any], str] = _any,
    *,
    required: bool = True,
    lenient: Callable[[Any], str] | None = None,
    **kwargs: Any,
) -> Any:
    """A dataclass field with its checker, whether a valid record must hold the key, and the checker a stored record
    is read with (`lenient`; default: the same)."""
    return field(metadata={"check": check, "required": required, "lenient": lenient or check}, **kwargs)


def _opt(check: Callable[[Any], str] = _any, **kwargs: Any) -> Any:
    """An optional field (absent in some records), null by default."""
    return _spec(check, required=False, default=None, **kwargs)


def _data_fields(cls: type) -> list[Field[Any]]:
    return [f for f in fields(cls) if f.name not in ("extra", "_given")]


def _default(f: Field[Any]) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


P = TypeVar("P", bound="_Part")


@dataclass
class _Part:
    """A JSON object with named fields; keys it does not name are kept in `extra`, in their order."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    # The fields the parsed object held (an optional one is written back then, even as null).
    _given: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    # Fields holding nested parts: name -> (part class, is a list of them). A field whose default is None may hold
    # null instead.
    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {}

    def __post_init__(self) -> None:
        """A nested part given as a plain dict (or a list of them) is read as that part, leniently."""
        for name, (part, many) in self._nested.items():
            value = getattr(self, name)
            if many and isinstance(value, list):
                setattr(self, name, [part._parse(v, name, None) if isinstance(v, dict) else v for v in value])
            elif not many and isinstance(value, dict):
                setattr(self, name, part._parse(value, name, None))

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in _data_fields(cls))

    @classmethod
    def required_keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in _data_fields(cls) if f.metadata.get("required", True))

    @classmethod
    def all_keys(cls) -> frozenset[str]:
        """Every key this part and the parts nested in it name (the key names a reader may look up)."""
        names = set(cls.keys())
        for part, _ in cls._nested.values():
            names |= part.all_keys()
        return frozenset(names)

    def to_dict(self) -> dict[str, Any]:
        """Every required field; an optional one when the parsed record held it or it holds a value (records that
        predate it round-trip)."""
        optional = set(self.keys()) - set(self.required_keys())
        out = {
            name: _plain(getattr(self, name))
            for name in self.keys()
            if name not in optional or getattr(self, name) is not None or name in self._given
        }
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out

    @classmethod
    def _parse(cls: type[P], data: Any, where: str, problems: list[str] | None, closed: bool = False) -> P:
        """Build from a dict. `problems` given: collect what is wrong (strict; `closed`: keys no field names are
        wrong too); None: replace it by the default."""
        if not isinstance(data, dict):
            if problems is not None:
                problems.append(f"{where} must be an object")
            data = {}
        values: dict[str, Any] = {}
        for f in _data_fields(cls):
            if f.name not in data:
                if problems is not None and f.metadata.get("required", True):
                    problems.append(f"{where} lacks {f.name}")
                continue  # the dataclass default
            raw = data[f.name]
            nested = cls._nested.get(f.name)
            if nested is not None:
                part, many = nested
                if raw is None and f.default is None:
                    values[f.name] = None
                    continue
                if many:
                    if not isinstance(raw, list):
                        if problems is not None:
                            problems.append(f"{where}.{f.name} must be a list")
                        continue
                    items = [(i, x) for i, x in enumerate(raw) if problems is not None or isinstance(x, dict)]
                    values[f.name] = [part._parse(x, f"{where}.{f.name}[{i}]", problems, closed) for i, x in items]
                else:
                    values[f.name] = part._parse(raw, f"{where}.{f.name}", problems, closed)
                continue
            error = f.metadata["check" if problems is not None else "lenient"](raw)
            if error:
                if problems is not None:
                    problems.append(f"{where}.{f.name} {error}")
                continue
            values[f.name] = raw
        names = set(cls.keys())
        extra = {k: v for k, v in data.items() if k not in names}
        unnamed = [k for k in extra if not (cls is Record and k in TRANSIT_KEYS)]
        if closed and problems is not None and unnamed:
            problems.append(f"{where} holds keys evaluator/harness/record.py does not name: {unnamed}")
        made = cls(**values, extra=extra)
        made._given = frozenset(k for k in data if k in names)
        return made


def _plain(value: Any) -> Any:
    if isinstance(value, _Part):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass
class Distribution(_Part):
    """One input distribution of the verified gate (protocol section 2)."""

    name: str = _spec(default="")
    passed: bool | None = _spec(default=None)
    skipped: bool = _spec(default=False)
    skip_reason: str = _spec(default="")
    max_abs_error: float | None = _spec(default=None)
    max_rel_error: float | None = _spec(default=None)
    trials: int = _spec(default=0)
    error: str = _spec(default="")
    # How far from passing (schema 2; null in older records): the gate's atol = rtol for the output's dtype, the
    # worst element's |err| / (atol + rtol * |ref|) over the trials (> 1: failed), and the worst trial's count of
    # elements beyond it (NaN/Inf mismatches included) out of `elements` per output.
    atol: float | None = _spec(_opt_num, required=False, default=None)
    rtol: float | None = _spec(_opt_num, required=False, default=None)
    worst_ratio: float | None = _spec(_opt_num, required=False, default=None)
    beyond_tolerance: int | None = _spec(_opt_num, required=False, default=None)
    elements: int | None = _spec(_opt_num, required=False, default=None)


@dataclass
class Check(_Part):
    """One anti-cheat check; `passed` None: not run or not applicable. A stored record of any age reads with the
    name it has; a record the harness prints or the site stores names only checks of CheckName."""

    name: str = _spec(_check_name, lenient=_text, default="")
    passed: bool | None = _spec(default=None)
    detail: str = _spec(default="not run")


@dataclass
class TimingSide(_Part):
    """One timed side (the candidate or a baseline): timing.summarise."""

    median_ms: float | None = _spec(_opt_num, default=None)
    iqr_ms: float | None = _spec(_opt_num, default=None)
    mean_ms: float | None = _spec(_opt_num, default=None)
    calls: int | None = _spec(_opt_int, default=None)
    rse: float | None = _spec(_opt_num, default=None)
    rse_median: float | None = _opt(_opt_num)  # the median's relative standard error (older records lack it)


@dataclass
class CompileSide(_Part):
    """The torch.compile baseline: a timed side, or {"error": ...} when it failed to build."""

    median_ms: float | None = _opt(_opt_num)
    iqr_ms: float | None = _opt(_opt_num)
    mean_ms: float | None = _opt(_opt_num)
    calls: int | None = _opt(_opt_int)
    rse: float | None = _opt(_opt_num)
    rse_median: float | None = _opt(_opt_num)
    error: str | None = _opt(_opt_text)


@dataclass
class Wallclock(_Part):
    """The wall-clock cross-check (timing_record.wallclock_crosscheck): the clocks the candidate cannot forge."""

    candidate_synced_median_ms: float | None = _opt(_opt_num)
    baseline_synced_median_ms: float | None = _opt(_opt_num)
    candidate_ratio: float | None = _opt(_opt_num)
    candidate_overhead_ms_per_call: float | None = _opt(_opt_num)
    baseline_overhead_ms_per_call: float | None = _opt(_opt_num)
    speedup_wallclock: float | None = _opt(_opt_num)
    speedup_orchestrator_clock: float | None = _opt(_opt_num)
    overhead_jitter_ms_per_block: dict[str, float | None] | None = _opt(_numbers)  # {baseline, candidate}
    excess_ms_per_block: float | None = _opt(_opt_num)


@dataclass
class FreshInputs(_Part):
    """The candidate's calls on never-seen inputs (timing_record.fresh_input_check)."""

    median_ms: float | None = _opt(_opt_num)
    calls: int | None = _opt(_opt_int)
    rounds: int | None = _opt(_opt_int)


@dataclass
class TimingPrecision(_Part):
    """How precise the speedup came out against the target (timing_record.describe_precision). Records before it
    held the precision flags of each side here instead (the four text fields)."""

    ci_target: float | None = _opt(_opt_num)
    ci_half_width: float | None = _opt(_opt_num)
    met: bool | None = _opt(_opt_bool)
    pairs_stopped_by: list[str] | None = _opt(_texts)
    candidate: str | None = _opt(_opt_text)
    baseline_tf32: str | None = _opt(_opt_text)
    baseline_fp32: str | None = _opt(_opt_text)
    reference_for_correctness: str | None = _opt(_opt_text)


@dataclass
class SideFlags(_Part):
    """The precision flags each side was timed under (timing_record.describe_method), and where FP32 was timed."""

    candidate: str | None = _opt(_opt_text)
    baseline_tf32: str | None = _opt(_opt_text)
    baseline_fp32: str | None = _opt(_opt_text)
    reference_for_correctness: str | None = _opt(_opt_text)


@dataclass
class PairRow(_Part):
    """One process pair's medians (timing_record.describe_pairs)."""

    pair: int | None = _opt(_opt_int)
    baseline_tf32_median_ms: float | None = _opt(_opt_num)
    candidate_median_ms: float | None = _opt(_opt_num)
    speedup: float | None = _opt(_opt_num)
    calls: int | None = _opt(_opt_int)


@dataclass
class PairStart(_Part):
    """One later process pair's start (timing_phase): its seconds and the GPU hold it ran under."""

    pair: int | None = _opt(_opt_int)
    seconds: float | None = _opt(_opt_num)
    gpu_hold: str | None = _opt(_opt_text)


@dataclass
class HostFraction(_Part):
    """A call's host time over its event time per side (timing_phase.host_fractions; CUDA only)."""

    baseline_tf32: float | None = _opt(_opt_num)
    candidate: float | None = _opt(_opt_num)
    method: str | None = _opt(_opt_text)


@dataclass
class TimingCpu(_Part):
    """Where the workers were timed (cpu_pin.py): the leased CPU, threads pinned per pair and worker, and why."""

    pinned: int | None = _opt(_opt_int)
    threads_pinned: list[dict[str, int]] | None = _opt(_mappings)
    why: str | None = _opt(_opt_text)


@dataclass
class CandidateCpu(_Part):
    """The kernel's CPU time while the baseline was timed (candidate_cpu.py)."""

    during_baseline_ms: float | None = _opt(_opt_num)
    baseline_wall_ms: float | None = _opt(_opt_num)
    method: str | None = _opt(_opt_text)


@dataclass
class PaperLoop(_Part):
    """KernelBench's own loop on both sides, for comparison only (option paper_loop)."""

    method: str | None = _opt(_opt_text)
    calls: int | None = _opt(_opt_int)
    baseline_tf32_ms: float | None = _opt(_opt_num)
    candidate_ms: float | None = _opt(_opt_num)
    speedup: float | None = _opt(_opt_num)


@dataclass
class Timing(_Part):
    """Paired timing (protocol section 4; timing_record.py and timing_phase.py write it). The first seven fields
    are in every record; the others in records of the harness versions that measure them."""

    method: str | None = _spec(_opt_text, default=None)
    device_kind: str | None = _spec(_opt_text, default=None)
    candidate: TimingSide = _spec(default_factory=TimingSide)
    baseline_tf32: TimingSide = _spec(default_factory=TimingSide)
    baseline_fp32: TimingSide = _spec(default_factory=TimingSide)
    baseline_compile: CompileSide | None = _spec(default=None)
    wallclock: Wallclock | None = _spec(default=None)
    l2_flush: Any = _opt()  # the reference worker's flush detail
    launch_lead: Any = _opt()  # the reference worker's launch-lead detail (lead.py)
    order: str | None = _opt(_opt_text)
    input_sets: int | None = _opt(_opt_int)
    precision: TimingPrecision | None = _opt()
    flags: SideFlags | None = _opt()
    ci_method: str | None = _opt(_opt_text)
    ci_half_width: float | None = _opt(_opt_num)  # the interval is [speedup / (1 + this), speedup * (1 + this)]
    candidate_fresh_inputs: FreshInputs | None = _opt()
    block_calls: int | None = _opt(_opt_int)
    pairs: list[PairRow] | None = _opt()
    host_fraction: HostFraction | None = _opt()
    process_pairs_policy: str | None = _opt(_opt_text)
    pair_starts: list[PairStart] | None = _opt()
    unstable: bool | None = _opt(_opt_bool)
    unstable_reason: str | None = _opt(_opt_text)
    cpu: TimingCpu | None = _opt()
    candidate_cpu: CandidateCpu | None = _opt()
    paper_loop: PaperLoop | None = _opt()

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "candidate": (TimingSide, False),
        "baseline_tf32": (TimingSide, False),
        "baseline_fp32": (TimingSide, False),
        "baseline_compile": (CompileSide, False),
        "wallclock": (Wallclock, False),
        "precision": (TimingPrecision, False),
        "flags": (SideFlags, False),
        "candidate_fresh_inputs": (FreshInputs, False),
        "pairs": (PairRow, True),
        "host_fraction": (HostFraction, False),
        "pair_starts": (PairStart, True),
        "cpu": (TimingCpu, False),
        "candidate_cpu": (CandidateCpu, False),
        "paper_loop": (PaperLoop, False),
    }


@dataclass
class Memory(_Part):
    """Peak device memory of one forward call on each side (protocol section 5)."""

    baseline_peak_bytes: int | None = _spec(_opt_int, default=None)
    candidate_peak_bytes: int | None = _spec(_opt_int, default=None)


@dataclass
class SpeedOfLight(_Part):
    """The roofline bound of the problem on the device (roofline.speed_of_light): `bound_ms` and `fraction` are
    null on a device the table does not know (the CPU), `fraction` also without a time; `compute_ms` and
    `memory_ms` only on a known device."""

    flops: int | None = _spec(_opt_int, default=None)
    bytes: int | None = _spec(_opt_int, default=None)
    bound_ms: float | None = _spec(_opt_num, default=None)
    fraction: float | None = _spec(_opt_num, default=None)
    matrix_flops: int | None = _opt(_opt_int)
    vector_flops: int | None = _opt(_opt_int)
    precision: str | None = _opt(_opt_text)
    device: str | None = _opt(_opt_text)
    limit: str | None = _opt(_opt_text)
    compute_ms: float | None = _opt(_opt_num)
    memory_ms: float | None = _opt(_opt_num)


@dataclass
class LaunchedKernel(_Part):
    """One kernel name's launches in a profiled call (launched.summarise)."""

    name: str = _spec(_text, default="")
    count: int | None = _opt(_opt_int)
    time_us: float | None = _opt(_opt_num)
    share: float | None = _opt(_opt_num)


@dataclass
class LaunchedSide(_Part):
    """The device kernels of one profiled call, slowest first."""

    kernels: list[LaunchedKernel] = _spec(default_factory=list)
    launches: int | None = _opt(_opt_int)
    total_us: float | None = _opt(_opt_num)

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {"kernels": (LaunchedKernel, True)}


@dataclass
class LaunchedKernels(_Part):
    """What ran (launched.report; CUDA only), or {"error": ...} when the profiled calls failed."""

    candidate: LaunchedSide | None = _opt()
    baseline: LaunchedSide | None = _opt()
    custom_defined: list[str] | None = _opt(_texts)
    builds_device_code: bool | None = _opt(_opt_bool)
    custom_launched: bool | None = _opt(_opt_bool)
    source: str | None = _opt(_opt_text)
    traces: dict[str, str | None] | None = _opt(_opt_mapping)  # side -> trace file name (a staff profile request)
    error: str | None = _opt(_opt_text)

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "candidate": (LaunchedSide, False),
        "baseline": (LaunchedSide, False),
    }


@dataclass
class EnvOptions(_Part):
    """The options that change a verdict's meaning (verdict.environment)."""

    quick: bool | None = _opt(_opt_bool)
    compile_baseline: bool | None = _opt(_opt_bool)
    randomise_params: bool | None = _opt(_opt_bool)
    verified_trials: int | None = _opt(_opt_int)


@dataclass
class Tolerances(_Part):
    """atol = rtol of each gate for fp32 outputs, and the half-precision ones by dtype (protocol.tolerance_for)."""

    verified: float | None = _opt(_opt_num)
    standard: float | None = _opt(_opt_num)
    half_precision: dict[str, float] | None = _opt(_numbers)


@dataclass
class StandardProtocol(_Part):
    """How the standard protocol's verdict was reached (correctness_phase.check_correctness)."""

    trials: int | None = _opt(_opt_int)
    tolerance: float | None = _opt(_opt_num)
    distribution: str | None = _opt(_opt_text)
    params: str | None = _opt(_opt_text)


@dataclass
class Environment(_Part):
    """What the numbers were measured on and under (verdict.environment, evaluation.py, setup_phase.py,
    correctness_phase.py); `driver` is added by the site (evaluator/host.py). Every field is optional: records
    built by the site (timeouts, demo data) hold few."""

    harness_version: str | None = _opt(_opt_text)
    device: str | None = _opt(_opt_text)
    device_name: str | None = _opt(_opt_text)
    arch: Any = _opt()
    torch: str | None = _opt(_opt_text)
    cuda: str | None = _opt(_opt_text)
    cudnn: Any = _opt()
    python: str | None = _opt(_opt_text)
    hardware: str | None = _opt(_opt_text)
    seeds_digest: str | None = _opt(_opt_text)
    seeds_scheme: str | None = _opt(_opt_text)
    kernel_sha256: str | None = _opt(_opt_text)
    options: EnvOptions | None = _opt()
    tolerance: Tolerances | None = _opt()
    precision_flags: dict[str, Any] | None = _opt(_opt_mapping)  # null: no kernel call ran
    standard_protocol: StandardProtocol | None = _opt()
    compile_cache: str | None = _opt(_opt_text)
    compile_cache_store: Any = _opt()
    load_limit_s: float | None = _opt(_opt_num)
    output_handover: Any = _opt()
    candidate_uid: int | None = _opt(_opt_int)
    sandbox: str | None = _opt(_opt_text)
    sandbox_reason: str | None = _opt(_opt_text)
    orchestrator: dict[str, Any] | None = _opt(_opt_mapping)
    limits: dict[str, Any] | None = _opt(_opt_mapping)  # host_memory_bytes, fsize_bytes, nproc, cgroup...
    prestarted_workers: bool | None = _opt(_opt_bool)
    driver: str | None = _opt(_opt_text)

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "options": (EnvOptions, False),
        "tolerance": (Tolerances, False),
        "standard_protocol": (StandardProtocol, False),
    }


@dataclass
class Record(_Part):
    """One evaluation's result. `Record()` is a record with nothing measured yet (a runtime error)."""

    schema_version: int = _spec(_version, required=False, default=SCHEMA_VERSION)
    harness_version: str = _spec(default=HARNESS_VERSION)
    status: str = _spec(_status, default="runtime_error")
    correct: bool | None = _spec(_opt_bool, default=None)
    standard_correct: bool | None = _spec(_opt_bool, default=None)
    distributions: list[Distribution] = _spec(
        default_factory=lambda: [Distribution(name=name) for name, _ in DISTRIBUTIONS]
    )
    reference_constant: bool | None = _spec(_opt_bool, default=None)
    params_randomised: bool | None = _spec(_opt_bool, default=None)
    speedup: float | None = _spec(_opt_num, default=None)
    speedup_ci: list[float | None] | None = _spec(_interval, default=None)
    speedup_fp32: float | None = _spec(_opt_num, default=None)
    speedup_compile: float | None = _spec(_opt_num, default=None)
    timing: Timing = _spec(default_factory=Timing)
    memory_ratio: float | None = _spec(_opt_num, default=None)
    memory: Memory = _spec(default_factory=Memory)
    checks: list[Check] = _spec(default_factory=lambda: [Check(name=name) for name in CHECK_NAMES])
    error: str = _spec(_text, default="")
    # seconds by phase name (PHASE_NAMES, PHASE_PATTERN) and the counters of PHASE_COUNTERS
    phases: dict[str, float | None] = _spec(
        _phases, lenient=_mapping, default_factory=lambda: {"compile": None, "correctness": None, "timing": None}
    )
    environment: Environment = _spec(default_factory=lambda: Environment(harness_version=HARNESS_VERSION))
    # Schema 2 (absent in older records): the roofline bound (roofline.py) and the device kernels one candidate call
    # and one baseline call launched (launched.py; CUDA only).
    speed_of_light: SpeedOfLight | None = _opt()
    launched_kernels: LaunchedKernels | None = _opt()

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "distributions": (Distribution, True),
        "timing": (Timing, False),
        "memory": (Memory, False),
        "checks": (Check, True),
        "environment": (Environment, False),
        "speed_of_light": (SpeedOfLight, False),
        "launched_kernels": (LaunchedKernels, False),
    }

    @classmethod
    def from_dict(cls, data: Any, *, closed: bool = False) -> Record:
        """Parse a record; raise ValueError, listing every problem, unless it has the shape of section 8.

        `closed` (the harness, before it prints): also every key must be a field here (TRANSIT_KEYS aside) and every
        phase a known one; the site reads records without it, so those of other harness versions still load."""
        if not isinstance(data, dict):
            raise ValueError("result record must be a JSON object")
        missing = [key for key in cls.required_keys() if key not in data]
        if missing:
            raise ValueError(f"result record lacks keys: {missing}")
        problems: list[str] = []
        record = cls._parse(_upgrade(data), "record", problems, closed)
        if [d.name for d in record.distributions] != [n for n, _ in DISTRIBUTIONS]:
            problems.append("distributions must list D1..D4 in order")
        if closed and isinstance(record.phases, dict):
            unknown = [
                k
                for k in record.phases
                if k not in PHASE_NAMES and k not in PHASE_COUNTERS and not PHASE_PATTERN.fullmatch(k)
            ]
            if unknown:
                problems.append(f"record.phases holds phases evaluator/harness/record.py does not name: {unknown}")
        if problems:
            raise ValueError("invalid result record: " + "; ".join(problems))
        return record

    @classmethod
    def from_stored(cls, data: Any) -> Record:
        """Read a stored record of any age for display: what is missing or malformed reads as its default (lists
        as empty), and a value that is not a record reads as an empty one. Never raises."""
        data = data if isinstance(data, dict) else {}
        blanks: dict[str, list[Any]] = {key: [] for key, (_, many) in cls._nested.items() if many and key not in data}
        return cls._parse({**_upgrade(data), **blanks}, "record", None)

    @classmethod
    def from_json(cls, text: str | bytes) -> Record:
        return cls.from_dict(json.loads(text))

    def to_json(self) -> str:
        """One line of strict JSON (NaN and Inf become null)."""
        return dumps(self.to_dict())

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)


# Each step turns a record of version N (the key) into one of version N + 1.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: lambda data: data,  # version 1 only added schema_version itself
    1: lambda data: data,  # version 2 added optional fields (a distribution's atol, rtol, worst_ratio...)
}


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("schema_version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        return data  # left for the field check to report
    while version < SCHEMA_VERSION and version in _UPGRADES:
        data = _UPGRADES[version](data)
        version += 1
    return {**data, "schema_version": version}


def finite_json(value: Any) -> Any:
    """NaN/Inf are not JSON: store them as null (a record must round-trip through any JSON parser)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def dumps(record: dict[str, Any] | Record) -> str:
    """One line of strict JSON."""
    data = record.to_dict() if isinstance(record, Record) else record
    return json.dumps(finite_json(data), allow_nan=False, separators=(",", ":"))
