"""What the inspector page shows about one kernel (`KernelInspection`) and its typed rows: the record's parts as the
record types them (evaluator/harness/record.py), the page's own rows where it joins several sources (a distribution's
stored row with its record entry, an audit flag with its evidence lines). Filled by inspector.selectors; nothing
here queries the database."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalogue.models import Kernel
from evaluator.harness.protocol import PRECISION_MARGIN
from evaluator.harness.record import Check, Distribution, LaunchedKernel, LaunchedKernels, PairRow, Record
from evaluator.models import AuditFlag, ProfileRequest
from evaluator.selectors.compile_baseline import StoredCompile
from evaluator.verdict_label import VerdictLabel
from inspector.figures import SpeedupOrigin, TimedSide
from leaderboard.selectors.ranking_compute import EligibleEvaluation


@dataclass
class Evidence:
    lines: list[int]
    quote: str
    why: str


@dataclass
class FlagView:
    flag: AuditFlag
    evidence: list[Evidence]
    cpu_noise: bool = False  # raised by a clock-comparing check on a CPU: shown, not an open suspicion

    @property
    def lines(self) -> list[int]:
        return sorted({n for e in self.evidence for n in e.lines})


@dataclass
class SpeedupView:
    label: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class FoldedKernel:
    """One upload folded together with the inspected kernel, with its current evaluation's speedup."""

    kernel_id: int
    submission_id: int
    sample: int
    speedup: float | None
    status: str


@dataclass(frozen=True)
class DistributionRow:
    """One row of the correctness table: an input distribution (its stored DistributionResult, else the record's
    entry) or the re-check of timed outputs, judged by the same rule."""

    name: str
    inputs_help: str  # what its inputs were
    passed: bool | None
    skipped: bool
    skip_reason: str
    max_abs_error: float | None
    max_rel_error: float | None
    trials: int
    error: str
    how_far: Distribution | None  # the record's figures of how far from passing (None before schema 2)


@dataclass(frozen=True)
class LaunchedRow:
    """The candidate's and the baseline's n-th slowest kernel, side by side (None where a side has fewer)."""

    candidate: LaunchedKernel | None
    baseline: LaunchedKernel | None


@dataclass
class KernelInspection:
    kernel: Kernel
    evaluation: EligibleEvaluation | None
    evaluations: list[EligibleEvaluation]  # every evaluation of this kernel, current ones first
    result: Record
    verdict: VerdictLabel | None  # the evaluation's one-line verdict, from the distribution rows shown here
    distributions: list[DistributionRow]
    checks: list[Check]
    speedups: list[SpeedupView]
    timing_rows: list[TimedSide]  # each side with a median (inspector.figures)
    timing_extra: dict[str, Any]  # the timing part's scalar fields (method, device, order...), for the detail list
    timing_pairs: list[PairRow]  # per process pair (short problems): medians and speedup
    memory_ratio: float | None  # baseline / kernel peak (the column, else the record's)
    error: str
    flags: list[FlagView]
    kernel_html: str
    reference_html: str
    diff_html: str
    environment: dict[str, Any] = field(default_factory=dict)  # the record's environment as stored, for its list
    launched_rows: list[LaunchedRow] = field(default_factory=list)
    stored_compile: StoredCompile | None = None
    profiles: list[ProfileRequest] = field(default_factory=list)  # staff profile requests of this evaluation
    profile_unavailable: str = ""  # why a torch.profiler trace cannot be taken here ("" when it can)
    timing_parts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # wall clock, precision... (detail)
    origin: SpeedupOrigin | None = None  # where the headline speedup comes from (inspector.figures)
    cpu_timing: bool = False  # timed on a CPU: its timing checks are shown, not judged (inspector.cpu_noise)
    noise_checks: tuple[str, ...] = ()  # the checks whose failure on a CPU is timing noise, by name
    # Other uploads of the same code (same fingerprint: only comments, docstrings or formatting differ) by this LLM
    # for this problem: the board folds them with this one into one kernel, their median (ranking_compute).
    folded: list[FoldedKernel] = field(default_factory=list)

    @property
    def launched(self) -> LaunchedKernels | None:
        """The device kernels one call of each side launched (CUDA only)."""
        return self.result.launched_kernels

    @property
    def faster_than_light(self) -> bool:
        sol = self.result.speed_of_light
        return sol is not None and sol.faster_than_light()

    @property
    def precision_misses(self) -> list[Distribution]:
        """Failed distributions (timed outputs included) whose every miss was precision-sized (the record's
        `precision_sized`, protocol.precision_sized): shown with the explanation of an `incorrect`, not a cheat."""
        rows = [*self.result.distributions, *([self.result.timed_outputs] if self.result.timed_outputs else [])]
        return [d for d in rows if d.passed is False and d.precision_sized]

    @property
    def precision_margin(self) -> float:
        return PRECISION_MARGIN

    @property
    def eligible(self) -> bool:
        return bool(self.evaluation is not None and self.evaluation.eligible)

    @property
    def confirmed_hack(self) -> bool:
        return any(f.flag.review_state == AuditFlag.Review.CONFIRMED for f in self.flags)
