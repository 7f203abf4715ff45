"""`kernel_inspection(kernel_id)`: everything the inspector page shows about one kernel, in a fixed number of queries.

The result record (docs/protocol.md section 8) is read through its type, `Record.from_stored`
(evaluator/harness/record.py): fields an older harness did not write read as their defaults rather than breaking the
page, because records from older harness versions stay in the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.http import Http404

from catalogue.models import Kernel
from evaluator.harness.protocol import PRECISION_MARGIN
from evaluator.harness.record import Check, Distribution, Record
from evaluator.models import AuditFlag, DistributionResult, Evaluation, ProfileRequest
from evaluator.selectors.compile_baseline import stored_compile_baselines
from evaluator.selectors.profiles import profile_tool_unavailable
from inspector.cpu_noise import NOISY_CHECKS, cpu_noise_flag, cpu_timed
from inspector.figures import SpeedupOrigin, speedup_origin, timed_sides, timing_parts
from inspector.rendering import locate_quote, parse_lines, trim_error
from leaderboard.highlight import highlight_python, unified_diff_html
from leaderboard.selectors.pages import evaluations_with_verdicts
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


@dataclass
class KernelInspection:
    kernel: Kernel
    evaluation: EligibleEvaluation | None
    evaluations: list[EligibleEvaluation]  # every evaluation of this kernel, current ones first
    result: Record
    distributions: list[DistributionResult | Distribution]
    checks: list[Check]
    speedups: list[SpeedupView]
    timing_rows: list[tuple[str, str, dict]]  # (key, label, per-call stats) of each side with a median
    timing_extra: dict[str, Any]  # scalar timing fields: method, flush, device...
    timing_pairs: list[dict[str, Any]]  # per process pair (short problems): medians and speedup
    memory: dict[str, Any]  # candidate_peak_bytes, baseline_peak_bytes, ratio
    error: str
    flags: list[FlagView]
    kernel_html: str
    reference_html: str
    diff_html: str
    environment: dict[str, Any] = field(default_factory=dict)
    speed_of_light: dict[str, Any] | None = None  # the record's roofline bound (speed of light)
    launched: dict[str, Any] | None = None  # the record's launched kernels, both sides (CUDA only)
    launched_rows: list[tuple[dict | None, dict | None]] = field(default_factory=list)  # side by side
    stored_compile: Any = None  # evaluator.selectors.compile_baseline.StoredCompile, or None
    profiles: list[ProfileRequest] = field(default_factory=list)  # staff profile requests of this evaluation
    profile_unavailable: str = ""  # why a torch.profiler trace cannot be taken here ("" when it can)
    timing_parts: list[tuple[str, dict]] = field(default_factory=list)  # wall clock, precision, flags... (detail)
    origin: SpeedupOrigin | None = None  # where the headline speedup comes from (inspector.figures)
    cpu_timing: bool = False  # timed on a CPU: its timing checks are shown, not judged (inspector.cpu_noise)
    noise_checks: tuple[str, ...] = ()  # the checks whose failure on a CPU is timing noise, by name
    # Other uploads of the same code (same fingerprint: only comments, docstrings or formatting differ) by this LLM
    # for this problem: the board folds them with this one into one kernel, their median (ranking_compute).
    folded: list[FoldedKernel] = field(default_factory=list)

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
    def faster_than_light(self) -> bool:
        sol = self.result.speed_of_light
        return sol is not None and sol.faster_than_light()

    @property
    def eligible(self) -> bool:
        return bool(self.evaluation is not None and self.evaluation.eligible)

    @property
    def confirmed_hack(self) -> bool:
        return any(f.flag.review_state == AuditFlag.Review.CONFIRMED for f in self.flags)


AnyEvaluation = TypeVar("AnyEvaluation", bound=Evaluation)  # with or without the eligibility annotation


def _pick_evaluation(evaluations: list[AnyEvaluation], evaluation_id: int | None) -> AnyEvaluation | None:
    if evaluation_id is not None:
        for e in evaluations:
            if e.pk == evaluation_id:
                return e
        raise Http404("No such evaluation for this kernel")
    current = [e for e in evaluations if e.is_current]
    preferred = [e for e in current if e.hardware == settings.EVALUATOR_DEFAULT_HARDWARE]
    chosen = preferred or current or evaluations
    return chosen[0] if chosen else None


SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}
VERDICT_ORDER = {"hack": 0, "suspicious": 1, "info": 2, "clean": 3}


def flag_order(flag: AuditFlag) -> tuple[bool, int, int]:
    """Confirmed first, then by severity (high first), then hacks before suspicions before information."""
    return (
        flag.review_state != AuditFlag.Review.CONFIRMED,
        SEVERITY_ORDER.get(flag.severity, 4),
        VERDICT_ORDER.get(flag.verdict, 4),
    )


def _flag_views(flags: list[AuditFlag], source: str) -> list[FlagView]:
    """Each flag with its evidence, sorted by flag_order (stable: newest first within a rank). An evidence item's
    `why` that repeats the flag's rationale is dropped, so each flag's text is said once."""
    views = []
    for flag in sorted(flags, key=flag_order):
        rationale = " ".join((flag.rationale or "").split())
        items = flag.evidence if isinstance(flag.evidence, list) else []
        evidence = []
        for item in items:
            if not isinstance(item, dict):
                continue
            quote = str(item.get("quote") or "")
            lines = parse_lines(item.get("lines")) or locate_quote(source, quote)
            why = str(item.get("why") or "")
            if rationale and " ".join(why.split()) == rationale:
                why = ""
            evidence.append(Evidence(lines=lines, quote=quote, why=why))
        views.append(FlagView(flag=flag, evidence=evidence, cpu_noise=cpu_noise_flag(flag)))
    return sorted(views, key=lambda v: v.cpu_noise)  # what is not evidence comes last


def _timing(result: Record) -> tuple[dict, list[dict[str, Any]]]:
    timing = result.timing.to_dict()  # the named sides, then what this harness version added (wallclock, ...)
    extra = {k: v for k, v in timing.items() if not isinstance(v, dict | list)}
    pairs = timing.get("pairs")
    return extra, [p for p in pairs if isinstance(p, dict)] if isinstance(pairs, list) else []


def _memory(result: Record, evaluation: Evaluation | None) -> dict[str, Any]:
    memory = result.memory.to_dict()
    ratio = evaluation.memory_ratio if evaluation and evaluation.memory_ratio is not None else result.memory_ratio
    memory["ratio"] = ratio
    return memory


def _ci(value: object) -> tuple[float | None, float | None]:
    if isinstance(value, list | tuple) and len(value) == 2:
        return value[0], value[1]
    return None, None


def kernel_inspection(kernel_id: int, *, evaluation_id: int | None = None, staff: bool = False) -> KernelInspection:
    """Everything about one kernel: sources (highlighted, side by side, diffed), the chosen evaluation's result,
    distributions, checks, timing, memory, errors and audit flags with their evidence lines."""
    try:
        kernel = Kernel.objects.select_related("llm", "problem", "submission").get(pk=kernel_id)
    except Kernel.DoesNotExist as exc:
        raise Http404("No such kernel") from exc
    evaluations = list(
        evaluations_with_verdicts().filter(kernel_id=kernel.pk).order_by("-is_current", "hardware", "-queued_at")
    )
    evaluation = _pick_evaluation(evaluations, evaluation_id)
    result = Record.from_stored(evaluation.result if evaluation else None)

    distributions: list[DistributionResult | Distribution] = []
    if evaluation:
        distributions = list(DistributionResult.objects.filter(evaluation=evaluation).order_by("name"))
    if not distributions:  # older records keep them only in the JSON
        distributions = list(result.distributions)
    # How far each distribution was from passing (worst element against atol + rtol*|ref|, count beyond it):
    # kept in the record only, so each row gets its record entry (None for records older than schema 2).
    in_record = {d.name: d for d in result.distributions if d.worst_ratio is not None}
    for d in distributions:
        d.how_far = in_record.get(d.name)  # type: ignore[union-attr]
    timed = result.timed_outputs  # the re-check of timed outputs, judged by the gate's rule: one more row
    if timed is not None:
        timed.how_far = timed if timed.worst_ratio is not None else None  # type: ignore[attr-defined]
        timed.inputs_help = "the outputs of timed calls, re-checked"  # type: ignore[attr-defined]
        distributions.append(timed)
    if evaluation:  # for the one-line verdict ("Incorrect: D4 (x-1) failed")
        evaluation.failed_distribution_names = [d.name for d in distributions if d.passed is False and not d.skipped]

    flags = _flag_views(
        list(AuditFlag.objects.filter(kernel=kernel).select_related("reviewed_by").order_by("-created_at")),
        kernel.source,
    )
    hl_lines = {n for f in flags for n in f.lines}

    speedups = []
    if evaluation:
        ci_low, ci_high = evaluation.speedup_ci_low, evaluation.speedup_ci_high
        if ci_low is None:
            ci_low, ci_high = _ci(result.speedup_ci)
        speedups.append(SpeedupView("vs PyTorch TF32 (verified)", evaluation.speedup, ci_low, ci_high))
        # The harness gives an interval for the headline (TF32) speedup only.
        speedups.append(SpeedupView("vs PyTorch FP32 (standard)", evaluation.speedup_fp32))
        if result.speedup_compile is not None:
            speedups.append(SpeedupView("vs torch.compile", result.speedup_compile))
    stored_compile = None
    if evaluation:
        key = (kernel.problem_id, evaluation.hardware)
        stored_compile = stored_compile_baselines([key]).get(key)
        if result.speedup_compile is None and stored_compile is not None:
            kernel_ms = evaluation.candidate_ms or result.timing.candidate.median_ms
            speedups.append(
                SpeedupView("vs torch.compile (stored sweep, not paired)", stored_compile.speedup(kernel_ms))
            )
    launched = result.launched_kernels.to_dict() if result.launched_kernels is not None else None
    timing_extra, timing_pairs = _timing(result)
    error = (evaluation.error if evaluation else "") or result.error

    return KernelInspection(
        kernel=kernel,
        evaluation=evaluation,
        evaluations=evaluations,
        result=result,
        distributions=distributions,
        checks=result.checks,
        speedups=speedups,
        timing_rows=timed_sides(result),
        timing_extra=timing_extra,
        timing_pairs=timing_pairs,
        timing_parts=timing_parts(result),
        origin=speedup_origin(result, evaluation.speedup) if evaluation else None,
        cpu_timing=bool(evaluation) and cpu_timed(result, evaluation.hardware if evaluation else None),
        noise_checks=tuple(sorted(NOISY_CHECKS)),
        memory=_memory(result, evaluation),
        error=trim_error(error),
        flags=flags,
        kernel_html=highlight_python(kernel.source, anchor="k", hl_lines=hl_lines),
        reference_html=highlight_python(kernel.problem.source, anchor="r"),
        diff_html=unified_diff_html(kernel.problem.source, kernel.source),
        environment=result.environment.to_dict(),
        speed_of_light=result.speed_of_light.to_dict() if result.speed_of_light is not None else None,
        launched=launched,
        launched_rows=_side_by_side(launched),
        stored_compile=stored_compile,
        profiles=list(ProfileRequest.objects.filter(evaluation=evaluation)) if evaluation and staff else [],
        profile_unavailable=profile_tool_unavailable(evaluation) if evaluation else "",
        folded=kernels_folded_with(kernel=kernel, hardware=evaluation.hardware if evaluation else None),
    )


def kernels_folded_with(*, kernel: Kernel, hardware: str | None) -> list[FoldedKernel]:
    """The LLM's other kernels for this problem with the same source fingerprint, oldest first, each with its
    current evaluation on `hardware` (one query; none for a kernel without a fingerprint)."""
    if not kernel.fingerprint:
        return []
    current = Evaluation.objects.filter(kernel_id=OuterRef("pk"), is_current=True, hardware=hardware)
    rows = (
        Kernel.objects.filter(llm_id=kernel.llm_id, problem_id=kernel.problem_id, fingerprint=kernel.fingerprint)
        .exclude(pk=kernel.pk)
        .annotate(
            current_speedup=Subquery(current.values("speedup")[:1]),
            current_status=Subquery(current.values("status")[:1]),
        )
        .order_by("created_at", "pk")
        .values_list("pk", "submission_id", "sample", "current_speedup", "current_status")
    )
    return [FoldedKernel(pk, sub, sample, speedup, status or "") for pk, sub, sample, speedup, status in rows[:100]]


def _side_by_side(launched: dict[str, Any] | None) -> list[tuple[dict | None, dict | None]]:
    """The candidate's and the baseline's kernels, slowest first, row by row."""
    if not launched:
        return []
    sides = []
    for key in ("candidate", "baseline"):
        part = launched.get(key)
        kernels = part.get("kernels") if isinstance(part, dict) else None
        sides.append([k for k in kernels if isinstance(k, dict)] if isinstance(kernels, list) else [])
    cand, base = sides
    return [
        (cand[n] if n < len(cand) else None, base[n] if n < len(base) else None)
        for n in range(max(len(cand), len(base)))
    ]


def kernel_result_record(kernel_id: int, *, evaluation_id: int | None = None) -> dict[str, Any]:
    """The raw result JSON of the chosen evaluation (what the harness wrote), for /kernels/<id>/result.json."""
    evaluations = list(Evaluation.objects.filter(kernel_id=kernel_id).order_by("-is_current", "hardware", "-queued_at"))
    if not evaluations and not Kernel.objects.filter(pk=kernel_id).exists():
        raise Http404("No such kernel")
    # The annotation `eligible` is not needed here, so plain rows are enough for the choice.
    evaluation = _pick_evaluation(evaluations, evaluation_id)
    if evaluation is None or evaluation.result is None:
        raise Http404("This kernel has no result record yet")
    return evaluation.result
