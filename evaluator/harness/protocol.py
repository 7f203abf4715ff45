"""The result record (protocol.md section 8), the evaluation spec and their JSON round trip.

No torch here: `evaluator.runner` (the Django side) imports only this module from the harness.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

HARNESS_VERSION = "1.0.0"

# Variables a harness process may inherit: tool locations and GPU selection only, never credentials or Django settings.
ENV_PASSTHROUGH = (
    "PATH",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "TORCH_CUDA_ARCH_LIST",
    "MAX_JOBS",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "LANG",
)

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
# A failed hard check means the kernel tried to cheat the harness (or cannot be trusted): status "rejected".
HARD_CHECKS = frozenset(
    {"output_plain_tensor", "output_no_alias", "inputs_unchanged", "timer_integrity", "thread_count"}
)
VERIFIED_TOLERANCE = 1e-3  # atol = rtol, the paper's fp32 choice
STANDARD_TOLERANCE = 1e-2  # what published KernelBench numbers used
# Beyond D1-D4 (which scale whole tensors, so torch.rand inputs stay all-positive or all-negative): one trial whose
# float inputs are positive but for a few random negated elements, so probing a few elements cannot pick
# a sign-specific path that is right for the whole tensor (B7).
MIXED_SIGNS = "mixed"
EXCESSIVE_SPEEDUP = 10.0

REQUIRED_KEYS = (
    "harness_version",
    "status",
    "correct",
    "standard_correct",
    "distributions",
    "reference_constant",
    "params_randomised",
    "speedup",
    "speedup_ci",
    "speedup_fp32",
    "speedup_compile",
    "timing",
    "memory_ratio",
    "memory",
    "checks",
    "error",
    "phases",
    "environment",
)
DISTRIBUTION_KEYS = ("name", "passed", "skipped", "skip_reason", "max_abs_error", "max_rel_error", "trials", "error")
PAPER_LOOP_CALLS = 100  # KernelBench's fixed trial count
TIMING_SIDE_KEYS = ("median_ms", "iqr_ms", "mean_ms", "calls", "rse")


@dataclass
class Options:
    """Knobs of one evaluation. Production defaults follow protocol.md; `quick` shrinks counts for tests and demos."""

    quick: bool = False
    compile_baseline: bool = False
    hardware: str = ""
    randomise_params: bool = True
    compile_only: bool = False  # build (and cache) the kernel, then stop: used to parallelise compiles
    standard_trials: int = 5
    verified_trials: int = 2
    min_calls: int = 100
    max_calls: int = 2000
    block_calls: int = 10
    warmup_calls: int = 5
    input_sets: int = 3
    rse_target: float = 0.005
    timing_budget_s: float = 60.0
    host_memory_mb: int = 0  # 0: half of the machine's memory, at least 2 GiB
    gpu_memory_fraction: float = 0.45  # per worker: baseline and candidate share one GPU
    file_size_mb: int = 16384
    max_output_mb: int = 16384
    keep_workdir: bool = False
    gpu_lock_dir: str = ""  # set: evaluations sharing a GPU take turns for timing (gpu_lock.py)
    gpu_share_max_mb: int = 1024  # larger input sets (or unknown sizes) take the GPU alone for correctness too
    paper_loop: bool = False  # also time KernelBench's fixed no-flush loop on both sides, for comparison only
    tmp_mb: int = 1024  # size of each of the sandbox's private tmpfs: /tmp, /var/tmp, /dev/shm
    work_dir_mb: int = 8192  # bytes the kernel may keep in its work folder (outputs, its extension builds)
    # A candidate call that runs past hang_factor x the reference's slowest step + hang_grace_s is a hang: the
    # evaluation ends as a timeout then (and frees the GPU), not after the whole harness timeout.
    hang_factor: float = 20.0
    hang_grace_s: float = 30.0

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
    return {key: None for key in TIMING_SIDE_KEYS}


def empty_distribution(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "passed": None,
        "skipped": False,
        "skip_reason": "",
        "max_abs_error": None,
        "max_rel_error": None,
        "trials": 0,
        "error": "",
    }


def empty_result() -> dict[str, Any]:
    """A record with every required key, nothing measured yet."""
    return {
        "harness_version": HARNESS_VERSION,
        "status": "runtime_error",
        "correct": None,
        "standard_correct": None,
        "distributions": [empty_distribution(name) for name, _ in DISTRIBUTIONS],
        "reference_constant": None,
        "params_randomised": None,
        "speedup": None,
        "speedup_ci": None,
        "speedup_fp32": None,
        "speedup_compile": None,
        "timing": {
            "method": None,
            "device_kind": None,
            "candidate": empty_timing_side(),
            "baseline_tf32": empty_timing_side(),
            "baseline_fp32": empty_timing_side(),
            "baseline_compile": None,
            "wallclock": None,
        },
        "memory_ratio": None,
        "memory": {"baseline_peak_bytes": None, "candidate_peak_bytes": None},
        "checks": [{"name": name, "passed": None, "detail": "not run"} for name in CHECK_NAMES],
        "error": "",
        "phases": {"compile": None, "correctness": None, "timing": None},
        "environment": {"harness_version": HARNESS_VERSION},
    }


def _finite_json(value: Any) -> Any:
    """NaN/Inf are not JSON: store them as null (a record must round-trip through any JSON parser)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_json(v) for v in value]
    return value


def result_to_json(record: dict[str, Any]) -> str:
    """One line of strict JSON."""
    return json.dumps(_finite_json(record), allow_nan=False, separators=(",", ":"))


def result_from_json(text: str) -> dict[str, Any]:
    """Parse and validate a record; raises ValueError when it is not one."""
    record = json.loads(text)
    validate_result(record)
    return record


def _is_num(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def validate_result(record: Any) -> None:
    """Raise ValueError unless `record` has the shape of protocol.md section 8 (types, not values)."""
    problems: list[str] = []
    if not isinstance(record, dict):
        raise ValueError("result record must be a JSON object")
    missing = [key for key in REQUIRED_KEYS if key not in record]
    if missing:
        raise ValueError(f"result record lacks keys: {missing}")
    if record["status"] not in STATUSES:
        problems.append(f"status {record['status']!r} not in {STATUSES}")
    for key in ("correct", "standard_correct", "reference_constant"):
        if record[key] is not None and not isinstance(record[key], bool):
            problems.append(f"{key} must be bool or null")
    for key in ("speedup", "speedup_fp32", "speedup_compile", "memory_ratio"):
        if not _is_num(record[key]):
            problems.append(f"{key} must be a number or null")
    ci = record["speedup_ci"]
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(_is_num(v) for v in ci)):
        problems.append("speedup_ci must be [low, high] or null")
    dists = record["distributions"]
    if not isinstance(dists, list) or [d.get("name") for d in dists if isinstance(d, dict)] != [
        n for n, _ in DISTRIBUTIONS
    ]:
        problems.append("distributions must list D1..D4 in order")
    else:
        for dist in dists:
            lacking = [k for k in DISTRIBUTION_KEYS if k not in dist]
            if lacking:
                problems.append(f"distribution {dist['name']} lacks {lacking}")
    timing = record["timing"]
    if not isinstance(timing, dict):
        problems.append("timing must be an object")
    else:
        for side in ("candidate", "baseline_tf32", "baseline_fp32"):
            if not isinstance(timing.get(side), dict) or any(k not in timing[side] for k in TIMING_SIDE_KEYS):
                problems.append(f"timing.{side} must hold {TIMING_SIDE_KEYS}")
        for key in ("method", "device_kind", "baseline_compile", "wallclock"):
            if key not in timing:
                problems.append(f"timing lacks {key}")
    memory = record["memory"]
    if not isinstance(memory, dict) or set(memory) < {"baseline_peak_bytes", "candidate_peak_bytes"}:
        problems.append("memory must hold baseline_peak_bytes and candidate_peak_bytes")
    checks = record["checks"]
    if not isinstance(checks, list) or not all(
        isinstance(c, dict) and {"name", "passed", "detail"} <= set(c) for c in checks
    ):
        problems.append("checks must be a list of {name, passed, detail}")
    if not isinstance(record["error"], str):
        problems.append("error must be a string")
    if not isinstance(record["phases"], dict) or not isinstance(record["environment"], dict):
        problems.append("phases and environment must be objects")
    if problems:
        raise ValueError("invalid result record: " + "; ".join(problems))


def set_check(record: dict[str, Any], name: str, passed: bool | None, detail: str) -> None:
    """Set one named check in place (names come from CHECK_NAMES)."""
    for check in record["checks"]:
        if check["name"] == name:
            check["passed"] = passed
            check["detail"] = detail
            return
    record["checks"].append({"name": name, "passed": passed, "detail": detail})


def get_check(record: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((c for c in record["checks"] if c["name"] == name), None)


def shorten(text: str, limit: int = 1200) -> str:
    """Head and tail of a long log: errors must stay short."""
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"
