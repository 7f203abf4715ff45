"""The result record's timing part (`Record.timing`, docs/protocol.md section 4): `Timing` and its sub-records.

Part of the record's one definition (record.py); timing_record.py and timing_phase.py write these keys.
No torch and no Django here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evaluator.harness.record_fields import (
    _mappings,
    _numbers,
    _opt,
    _opt_bool,
    _opt_int,
    _opt_num,
    _opt_text,
    _Part,
    _spec,
    _texts,
)


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
class PlacedBeside(_Part):
    """The other evaluations holding device memory (from the memory ledger) when a pair placed its buffers."""

    evaluations: int | None = _opt(_opt_int)
    declared_bytes: int | None = _opt(_opt_int)


@dataclass
class PairRow(_Part):
    """One process pair's medians (timing_record.describe_pairs)."""

    pair: int | None = _opt(_opt_int)
    baseline_tf32_median_ms: float | None = _opt(_opt_num)
    candidate_median_ms: float | None = _opt(_opt_num)
    speedup: float | None = _opt(_opt_num)
    calls: int | None = _opt(_opt_int)
    set_aside: bool | None = _opt(_opt_bool)  # a deviant process the interval leaves out (pair_interval.py)
    placed_beside: PlacedBeside | None = _opt()

    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {"placed_beside": (PlacedBeside, False)}


@dataclass
class PairStart(_Part):
    """One later process pair's start (timing_phase): its seconds and the GPU hold it ran under; of them `ended_s`,
    the old pair's end with the declaration held whole, the rest with it cut to what a start holds; `memory_wait_s`:
    how long it then waited to grow back (not in `seconds`)."""

    pair: int | None = _opt(_opt_int)
    seconds: float | None = _opt(_opt_num)
    ended_s: float | None = _opt(_opt_num)
    gpu_hold: str | None = _opt(_opt_text)
    memory_wait_s: float | None = _opt(_opt_num)


@dataclass
class HostFraction(_Part):
    """A call's host time over its event time per side (pair_policy.host_fractions; CUDA only)."""

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
