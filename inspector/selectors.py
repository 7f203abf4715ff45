"""`kernel_inspection(kernel_id)`: everything the inspector page shows about one kernel, in a fixed number of queries.

The result record (docs/protocol.md section 8) is read through its type, `Record.from_stored`
(evaluator/harness/record.py): fields an older harness did not write read as their defaults rather than breaking the
page, because records from older harness versions stay in the database.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.http import Http404

from catalogue.models import Kernel
from evaluator.harness.record import Distribution, LaunchedKernels, Record
from evaluator.models import AuditFlag, DistributionResult, Evaluation, ProfileRequest
from evaluator.selectors.compile_baseline import stored_compile_baselines
from evaluator.selectors.profiles import profile_tool_unavailable
from evaluator.verdict_label import DISTRIBUTIONS
from inspector.cpu_noise import NOISY_CHECKS, cpu_noise_flag, cpu_timed
from inspector.figures import speedup_origin, timed_sides, timing_parts
from inspector.page import (
    DistributionRow,
    Evidence,
    FlagView,
    FoldedKernel,
    KernelInspection,
    LaunchedRow,
    SpeedupView,
)
from inspector.rendering import locate_quote, parse_lines, trim_error
from leaderboard.highlight import highlight_python, unified_diff_html
from leaderboard.selectors.pages import evaluations_with_verdicts

TIMED_OUTPUTS_HELP = "the outputs of timed calls, re-checked"

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


def _timing_extra(result: Record) -> dict[str, Any]:
    """The timing part's scalar fields, as stored (what this harness version wrote), for the detail list."""
    return {k: v for k, v in result.timing.to_dict().items() if not isinstance(v, dict | list)}


def _ci(value: object) -> tuple[float | None, float | None]:
    if isinstance(value, list | tuple) and len(value) == 2:
        return value[0], value[1]
    return None, None


def _distribution_rows(evaluation: Evaluation | None, result: Record) -> list[DistributionRow]:
    """D1-D4 from the stored rows (older records keep them only in the JSON: then the record's), each with how far
    it was from passing (kept in the record only; None for records older than schema 2), then the re-check of timed
    outputs."""
    stored = list(DistributionResult.objects.filter(evaluation=evaluation).order_by("name")) if evaluation else []
    in_record = {d.name: d for d in result.distributions if d.worst_ratio is not None}
    rows = [
        DistributionRow(
            name=d.name,
            inputs_help=DISTRIBUTIONS.get(d.name, ("", ""))[1],
            passed=d.passed,
            skipped=d.skipped,
            skip_reason=d.skip_reason,
            max_abs_error=d.max_abs_error,
            max_rel_error=d.max_rel_error,
            trials=d.trials,
            error=d.errors if isinstance(d, DistributionResult) else d.error,
            how_far=in_record.get(d.name),
        )
        for d in (stored or result.distributions)
    ]
    timed = result.timed_outputs  # judged by the gate's rule: one more row
    if timed is not None:
        rows.append(_timed_outputs_row(timed))
    return rows


def _timed_outputs_row(timed: Distribution) -> DistributionRow:
    return DistributionRow(
        name=timed.name,
        inputs_help=TIMED_OUTPUTS_HELP,
        passed=timed.passed,
        skipped=timed.skipped,
        skip_reason=timed.skip_reason,
        max_abs_error=timed.max_abs_error,
        max_rel_error=timed.max_rel_error,
        trials=timed.trials,
        error=timed.error,
        how_far=timed if timed.worst_ratio is not None else None,
    )


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
    distributions = _distribution_rows(evaluation, result)
    # The one-line verdict names the failed rows shown here ("Incorrect: D4 (x-1) failed").
    failed = [d.name for d in distributions if d.passed is False and not d.skipped]

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
    error = (evaluation.error if evaluation else "") or result.error
    memory_ratio = evaluation.memory_ratio if evaluation and evaluation.memory_ratio is not None else None

    return KernelInspection(
        kernel=kernel,
        evaluation=evaluation,
        evaluations=evaluations,
        result=result,
        verdict=evaluation.verdict_label(failed=failed) if evaluation else None,
        distributions=distributions,
        checks=result.checks,
        speedups=speedups,
        timing_rows=timed_sides(result),
        timing_extra=_timing_extra(result),
        timing_pairs=[p for p in result.timing.pairs or [] if p is not None],
        timing_parts=timing_parts(result),
        origin=speedup_origin(result, evaluation.speedup) if evaluation else None,
        cpu_timing=bool(evaluation) and cpu_timed(result, evaluation.hardware if evaluation else None),
        noise_checks=tuple(sorted(NOISY_CHECKS)),
        memory_ratio=memory_ratio if memory_ratio is not None else result.memory_ratio,
        error=trim_error(error),
        flags=flags,
        kernel_html=highlight_python(kernel.source, anchor="k", hl_lines=hl_lines),
        reference_html=highlight_python(kernel.problem.source, anchor="r"),
        diff_html=unified_diff_html(kernel.problem.source, kernel.source),
        environment=result.environment.to_dict(),
        launched_rows=_side_by_side(result.launched_kernels),
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


def _side_by_side(launched: LaunchedKernels | None) -> list[LaunchedRow]:
    """The candidate's and the baseline's kernels, slowest first, row by row."""
    if launched is None:
        return []
    cand = launched.candidate.kernels if launched.candidate is not None else []
    base = launched.baseline.kernels if launched.baseline is not None else []
    return [
        LaunchedRow(cand[n] if n < len(cand) else None, base[n] if n < len(base) else None)
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
