"""The result record's other parts: memory, the speed of light, the launched kernels and the environment.

Part of the record's one definition (record.py). No torch and no Django here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evaluator.harness.record_fields import (
    _numbers,
    _opt,
    _opt_bool,
    _opt_int,
    _opt_mapping,
    _opt_num,
    _opt_text,
    _Part,
    _spec,
    _text,
    _texts,
)


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
    # Schema 4: the parts of `bytes` (inputs read once, the output written once, parameters and buffers read once)
    # and the data's dtype that chose `precision`, as the reference worker counted them (workers/flops.py), so a
    # problem's work taken from a record holds what `manage.py count_flops` stores (evaluator/services/work.py).
    input_bytes: int | None = _opt(_opt_int)
    output_bytes: int | None = _opt(_opt_int)
    param_bytes: int | None = _opt(_opt_int)
    dtype: str | None = _opt(_opt_text)

    def faster_than_light(self) -> bool:
        """The kernel was measured faster than the bound: a timing or correctness hole (or an algebraic shortcut)."""
        return isinstance(self.fraction, int | float) and self.fraction > 1.0


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
class GpuHold(_Part):
    """The evaluation's memory admission to its GPU (orchestrator/gpu_holds.py): what it declared, of what capacity,
    and how long it waited for it and why."""

    reserved_bytes: int | None = _opt(_opt_int)
    capacity_bytes: int | None = _opt(_opt_int)
    footprint_bytes: int | None = _opt(_opt_int)
    waited_s: float | None = _opt(_opt_num)
    waited_for: str | None = _opt(_opt_text)
    # which worker commands ran under which hold ("none", "shared", "exclusive"): the timed loops' alone
    commands: dict[str, dict[str, int]] | None = _opt(_opt_mapping)
    # the most the reference worker's allocator held of the device (reserved, cached blocks included; the highest
    # over its process pairs): set against half of reserved_bytes, whether a worker stays within its declaration
    reference_reserved_peak_bytes: int | None = _opt(_opt_int)
    # the reference worker's commands that raised that peak, each with what it raised it to (workers/memory.raised_by,
    # the most over its process pairs): the largest names the step during which the reference held the most
    reference_reserved_peak_by_command: dict[str, int] | None = _opt(_opt_mapping)
    # what an earlier evaluation of the problem saw its reference worker hold of this device at its most: the
    # least the declaration gives a worker beside its context (orchestrator/seen_peaks.py); null when none was seen
    seen_peak_bytes: int | None = _opt(_opt_int)


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
    problem_sha256: str | None = _opt(_opt_text)
    options: EnvOptions | None = _opt()
    tolerance: Tolerances | None = _opt()
    precision_flags: dict[str, Any] | None = _opt(_opt_mapping)  # null: no kernel call ran
    standard_protocol: StandardProtocol | None = _opt()
    compile_cache: str | None = _opt(_opt_text)
    compile_cache_store: Any = _opt()
    # A load step's own bound (import and __init__, not counting time seen compiling) and the most any step may
    # take while the kernel compiles (clients.StepBound; schema 3)
    load_limit_s: float | None = _opt(_opt_num)
    compile_limit_s: float | None = _opt(_opt_num)
    output_handover: Any = _opt()
    candidate_uid: int | None = _opt(_opt_int)
    sandbox: str | None = _opt(_opt_text)
    sandbox_reason: str | None = _opt(_opt_text)
    orchestrator: dict[str, Any] | None = _opt(_opt_mapping)
    limits: dict[str, Any] | None = _opt(_opt_mapping)  # host_memory_bytes, fsize_bytes, nproc, cgroup...
    prestarted_workers: bool | None = _opt(_opt_bool)
    gpu_hold: GpuHold | None = _opt()
    driver: str | None = _opt(_opt_text)

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {
        "options": (EnvOptions, False),
        "tolerance": (Tolerances, False),
        "standard_protocol": (StandardProtocol, False),
        "gpu_hold": (GpuHold, False),
    }
