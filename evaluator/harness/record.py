"""The result record (docs/protocol.md section 8): its one definition, validation and JSON round trip.

The dataclasses below are the only place the record's fields are named. The harness fills a record as a plain dict
(`Record().to_dict()`, what `protocol.empty_result()` returns) and checks it with `Record.from_dict` before it
prints it; the Django side builds its own records (timeouts, crashes, demo data) as `Record(...)`, validates every
record before storing it, and pages read stored ones through `Record.from_stored`, which never raises.

Keys a version of the harness adds beyond these fields are kept, unchanged, in each part's `extra` (the timing
part holds many: l2_flush, order, precision, paper_loop...), so a record survives `from_dict(...).to_dict()`.

`schema_version` counts changes to the field list. Records stored before it existed carry none and read as
version 0, which differs from version 1 only by lacking the field.

No torch and no Django here: `evaluator.runner` and the Django apps import this module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

HARNESS_VERSION = "1.0.0"
SCHEMA_VERSION = 2

STATUSES = ("ok", "compile_error", "runtime_error", "timeout", "rejected")
DISTRIBUTIONS: tuple[tuple[str, float], ...] = (("D1", 1.0), ("D2", 3.0), ("D3", 0.01), ("D4", -1.0))
CHECK_NAMES = (
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


def _status(value: Any) -> str:
    return "" if value in STATUSES else f"{value!r} not in {STATUSES}"


def _interval(value: Any) -> str:
    ok = value is None or (isinstance(value, list) and len(value) == 2 and all(_is_num(v) for v in value))
    return "" if ok else "must be [low, high] or null"


def _version(value: Any) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return "must be a non-negative integer"
    return f"{value} is newer than this code's {SCHEMA_VERSION}" if value > SCHEMA_VERSION else ""


def _spec(check: Callable[[Any], str] = _any, *, required: bool = True, **kwargs: Any) -> Any:
    """A dataclass field with its checker (and whether a valid record must hold the key)."""
    return field(metadata={"check": check, "required": required}, **kwargs)


def _default(f: Field) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


P = TypeVar("P", bound="_Part")


@dataclass
class _Part:
    """A JSON object with named fields; keys it does not name are kept in `extra`, in their order."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)

    # Fields holding nested parts: name -> (part class, is a list of them).
    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {}

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name != "extra")

    @classmethod
    def required_keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name != "extra" and f.metadata.get("required", True))

    def to_dict(self) -> dict[str, Any]:
        """Every required field; an optional one only when it holds a value (records that predate it round-trip)."""
        optional = set(self.keys()) - set(self.required_keys())
        out = {
            name: _plain(getattr(self, name))
            for name in self.keys()
            if name not in optional or getattr(self, name) is not None
        }
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out

    @classmethod
    def _parse(cls: type[P], data: Any, where: str, problems: list[str] | None) -> P:
        """Build from a dict. `problems` given: collect what is wrong (strict); None: replace it by the default."""
        if not isinstance(data, dict):
            if problems is not None:
                problems.append(f"{where} must be an object")
            data = {}
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "extra":
                continue
            if f.name not in data:
                if problems is not None and f.metadata.get("required", True):
                    problems.append(f"{where} lacks {f.name}")
                continue  # the dataclass default
            raw = data[f.name]
            nested = cls._nested.get(f.name)
            if nested is not None:
                part, many = nested
                if many:
                    if not isinstance(raw, list):
                        if problems is not None:
                            problems.append(f"{where}.{f.name} must be a list")
                        continue
                    items = [(i, x) for i, x in enumerate(raw) if problems is not None or isinstance(x, dict)]
                    values[f.name] = [part._parse(x, f"{where}.{f.name}[{i}]", problems) for i, x in items]
                else:
                    values[f.name] = part._parse(raw, f"{where}.{f.name}", problems)
                continue
            error = f.metadata.get("check", _any)(raw)
            if error:
                if problems is not None:
                    problems.append(f"{where}.{f.name} {error}")
                continue
            values[f.name] = raw
        names = set(cls.keys())
        return cls(**values, extra={k: v for k, v in data.items() if k not in names})


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
    """One anti-cheat check; `passed` None: not run or not applicable."""

    name: str = _spec(default="")
    passed: bool | None = _spec(default=None)
    detail: str = _spec(default="not run")


@dataclass
class TimingSide(_Part):
    """One timed side (the candidate or a baseline)."""

    median_ms: float | None = _spec(default=None)
    iqr_ms: float | None = _spec(default=None)
    mean_ms: float | None = _spec(default=None)
    calls: int | None = _spec(default=None)
    rse: float | None = _spec(default=None)


@dataclass
class Timing(_Part):
    """Paired timing (protocol section 4). `baseline_compile` holds a side, {"error": ...} or null."""

    method: str | None = _spec(default=None)
    device_kind: str | None = _spec(default=None)
    candidate: TimingSide = _spec(default_factory=TimingSide)
    baseline_tf32: TimingSide = _spec(default_factory=TimingSide)
    baseline_fp32: TimingSide = _spec(default_factory=TimingSide)
    baseline_compile: dict[str, Any] | None = _spec(default=None)
    wallclock: dict[str, Any] | None = _spec(default=None)

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "candidate": (TimingSide, False),
        "baseline_tf32": (TimingSide, False),
        "baseline_fp32": (TimingSide, False),
    }


@dataclass
class Memory(_Part):
    """Peak device memory of one forward call on each side (protocol section 5)."""

    baseline_peak_bytes: int | None = _spec(default=None)
    candidate_peak_bytes: int | None = _spec(default=None)


def _blank_phases() -> dict[str, Any]:
    return {"compile": None, "correctness": None, "timing": None}


def _blank_environment() -> dict[str, Any]:
    return {"harness_version": HARNESS_VERSION}


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
    params_randomised: bool | None = _spec(default=None)
    speedup: float | None = _spec(_opt_num, default=None)
    speedup_ci: list[float | None] | None = _spec(_interval, default=None)
    speedup_fp32: float | None = _spec(_opt_num, default=None)
    speedup_compile: float | None = _spec(_opt_num, default=None)
    timing: Timing = _spec(default_factory=Timing)
    memory_ratio: float | None = _spec(_opt_num, default=None)
    memory: Memory = _spec(default_factory=Memory)
    checks: list[Check] = _spec(default_factory=lambda: [Check(name=name) for name in CHECK_NAMES])
    error: str = _spec(_text, default="")
    phases: dict[str, Any] = _spec(_mapping, default_factory=_blank_phases)
    environment: dict[str, Any] = _spec(_mapping, default_factory=_blank_environment)
    # Issue 19 (schema 2; absent in older records): the roofline bound {flops, bytes, bound_ms, fraction, ...}
    # (roofline.py; bound and fraction null on an unknown device) and the device kernels one candidate call and one
    # baseline call launched {candidate, baseline, custom_defined, custom_launched} (launched.py; CUDA only).
    speed_of_light: dict[str, Any] | None = _spec(_opt_mapping, required=False, default=None)
    launched_kernels: dict[str, Any] | None = _spec(_opt_mapping, required=False, default=None)

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "distributions": (Distribution, True),
        "timing": (Timing, False),
        "memory": (Memory, False),
        "checks": (Check, True),
    }

    @classmethod
    def from_dict(cls, data: Any) -> Record:
        """Parse a record; raise ValueError, listing every problem, unless it has the shape of section 8."""
        if not isinstance(data, dict):
            raise ValueError("result record must be a JSON object")
        missing = [key for key in cls.required_keys() if key not in data]
        if missing:
            raise ValueError(f"result record lacks keys: {missing}")
        problems: list[str] = []
        record = cls._parse(_upgrade(data), "record", problems)
        if [d.name for d in record.distributions] != [n for n, _ in DISTRIBUTIONS]:
            problems.append("distributions must list D1..D4 in order")
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
