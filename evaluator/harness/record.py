"""The result record (docs/protocol.md section 8): its one definition, validation and JSON round trip.

The record's one definition is four modules, and their dataclasses are the only place the record's fields are
named: this one (`Record`, its distributions and checks, the check names, statuses and phases, validation and the
JSON round trip), record_timing.py (the timing part and its sub-records), record_parts.py (memory, the speed of
light, the launched kernels, the environment) and record_fields.py (the field checkers and the `_Part` base every
part is built on). Callers import every name from this module, which re-exports the parts. The harness fills a
`Record` (orchestrator/context.py: its phases assign typed parts and set checks with `Record.set_check`) and turns it
into JSON only where it prints it (protocol.result_to_json); the Django side builds its own records (timeouts,
crashes, demo data) as `Record(...)`, validates every record before storing it, and pages read stored ones through
`Record.from_stored`, which never raises.

Every key the harness writes is a field of these modules, down to the timing part's process pairs and the launched
kernels' rows; the harness checks its record with `from_dict(..., closed=True)` before it prints it
(protocol.result_to_json), so a key written but not named there, or a check name outside CheckName, is a harness
bug and ends the evaluation as an infrastructure error instead of reaching the site. Readers are lenient the other
way: keys a record holds beyond these fields (stored records of other harness versions, demo data) are kept,
unchanged, in each part's `extra`, so a record survives `from_dict(...).to_dict()`. An optional field is written
back when the record had it (null included) or when it holds a value.

`schema_version` counts changes to the field list. Records stored before it existed carry none and read as
version 0, which differs from version 1 only by lacking the field.

No torch and no Django here: `evaluator.runner` and the Django apps import this module.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

from evaluator.harness.record_fields import (
    _interval,
    _is_num,
    _mapping,
    _opt,
    _opt_bool,
    _opt_int,
    _opt_num,
    _Part,
    _spec,
    _text,
)
from evaluator.harness.record_parts import (
    Environment,
    EnvOptions,
    LaunchedKernel,
    LaunchedKernels,
    LaunchedSide,
    Memory,
    SpeedOfLight,
    StandardProtocol,
    Tolerances,
)
from evaluator.harness.record_timing import (
    CandidateCpu,
    CompileSide,
    FreshInputs,
    HostFraction,
    PairRow,
    PairStart,
    PaperLoop,
    SideFlags,
    Timing,
    TimingCpu,
    TimingPrecision,
    TimingSide,
    Wallclock,
)

__all__ = [  # what this module defines, and the record's parts it re-exports (record_timing.py, record_parts.py)
    "CHECK_NAMES",
    "DISTRIBUTIONS",
    "HARNESS_VERSION",
    "KNOWN_CHECKS",
    "PHASE_COUNTERS",
    "PHASE_NAMES",
    "PHASE_PATTERN",
    "SCHEMA_VERSION",
    "STATUSES",
    "TRANSIT_KEYS",
    "CandidateCpu",
    "Check",
    "CheckName",
    "CompileSide",
    "Distribution",
    "EnvOptions",
    "Environment",
    "FreshInputs",
    "HostFraction",
    "LaunchedKernel",
    "LaunchedKernels",
    "LaunchedSide",
    "Memory",
    "PairRow",
    "PairStart",
    "PaperLoop",
    "Record",
    "SideFlags",
    "SpeedOfLight",
    "StandardProtocol",
    "Timing",
    "TimingCpu",
    "TimingPrecision",
    "TimingSide",
    "Tolerances",
    "Wallclock",
    "dumps",
    "finite_json",
]

HARNESS_VERSION = "1.0.0"
SCHEMA_VERSION = 4

STATUSES = ("ok", "compile_error", "runtime_error", "timeout", "rejected")
DISTRIBUTIONS: tuple[tuple[str, float], ...] = (("D1", 1.0), ("D2", 3.0), ("D3", 0.01), ("D4", -1.0))
# Every anti-cheat check the harness may write (Record.set_check refuses any other name).
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
    # the same input tensors refilled in place with new values (C7; correctness_phase.refilled_inputs), schema 3
    "refilled_inputs",
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
        "start",
        "workers",
        "standby_workers",
        "device_context",  # the workers' CUDA contexts, made once the start's memory is admitted (gpu_holds.py)
        "gpu_memory_wait_start",  # of gpu_memory_wait, the declaration's admission (before device_context)
        "compile",
        "compile_import",
        "correctness",
        "timing_setup",
        "timing_loop",
        "timing_recheck",
        "timing_checks",
        "timing",
        "shutdown",
        "total",
        "gpu_wait",
        "gpu_memory_wait",
        "profile",
        "exclusive_s",
        "exclusive_timing_s",
        "exclusive_other_s",
    }
)
PHASE_PATTERN = re.compile(r"pair_\d+_start|timing_(loop|setup|recheck)_pair_\d+")
PHASE_COUNTERS = frozenset({"pair_starts_under_exclusive_lock"})
# Top-level keys that travel beside a record from the harness to the site, which takes them out before it stores
# the record: the master seed (seeds.RECORD_KEY, evaluator/services/seeds.py).
TRANSIT_KEYS = frozenset({"seeds_master"})

# --- The record's own field checkers (the shared ones are in record_fields.py) ----------------------------------


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


def _version(value: Any) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return "must be a non-negative integer"
    return f"{value} is newer than this code's {SCHEMA_VERSION}" if value > SCHEMA_VERSION else ""


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
    # Schema 3 (only where it failed): whether every miss was precision-sized (protocol.precision_sized: worst
    # element within PRECISION_MARGIN x its allowance, NaN/Inf where the reference has them): `incorrect`, never
    # evidence of cheating, wherever it is found.
    precision_sized: bool | None = _spec(_opt_bool, required=False, default=None)


@dataclass
class Check(_Part):
    """One anti-cheat check; `passed` None: not run or not applicable. A stored record of any age reads with the
    name it has; a record the harness prints or the site stores names only checks of CheckName."""

    name: str = _spec(_check_name, lenient=_text, default="")
    passed: bool | None = _spec(default=None)
    detail: str = _spec(default="not run")


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
    # Schema 3: the re-check of timed outputs (timed_outputs.py), reported as a distribution is (name "timed
    # outputs"; `trials`: outputs re-checked; `error`: where the worst one was and how far): judged by the gate's
    # own rule, so a precision-sized miss here is `incorrect` as in D1-D4. Null: no timed output was re-checked.
    timed_outputs: Distribution | None = _opt()

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "distributions": (Distribution, True),
        "timing": (Timing, False),
        "memory": (Memory, False),
        "checks": (Check, True),
        "environment": (Environment, False),
        "speed_of_light": (SpeedOfLight, False),
        "launched_kernels": (LaunchedKernels, False),
        "timed_outputs": (Distribution, False),
    }
    _transit: ClassVar[frozenset[str]] = TRANSIT_KEYS

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

    def set_check(self, name: CheckName, passed: bool | None, detail: str) -> None:
        """Set one named check in place (appended when the record does not list it yet); a name outside CheckName
        is a ValueError: the harness would print a record the site refuses."""
        if name not in KNOWN_CHECKS:
            raise ValueError(f"{name!r} is not a check name (record.CheckName)")
        found = self.check(name)
        if found is None:
            self.checks.append(Check(name=name, passed=passed, detail=detail))
        else:
            found.passed, found.detail = passed, detail


# Each step turns a record of version N (the key) into one of version N + 1.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: lambda data: data,  # version 1 only added schema_version itself
    1: lambda data: data,  # version 2 added optional fields (a distribution's atol, rtol, worst_ratio...)
    2: lambda data: data,  # version 3 added optional fields (timed_outputs, the environment's compile_limit_s)
    3: lambda data: data,  # version 4 added optional fields (the speed of light's input/output/param bytes, dtype)
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
