"""Writes of the reward-hack audit: flags from static rules, runtime signals and LLM judges; review; corroboration.

Hooks for the pipeline:
- at upload: `kernels_audit_static(kernel_ids=[...])` (the task audit_kernels_static, after the upload commits);
- after a result is stored: `kernel_audit_runtime(evaluation_id=...)`, which also enqueues the LLM judges when the
  kernel is correct with a verified speedup > 1 (docs/protocol.md section 7);
- on demand (staff, the API and the inspector's button alike): `kernel_audit_request(kernel_id=...)`.

Review states (AuditFlag.Review): a flag starts `suspected`; it becomes `corroborated` when an independent source
agrees (see `kernel_flags_corroborate`); a staff member moves it to `confirmed` (the kernel leaves the rankings via
evaluator.selectors.eligibility), `dismissed` or `legitimate` (D4 specialisation), always with a note.

Pure shaping (flag fields from findings and judge answers, imported records) is evaluator.audit.normalise; reads
(a kernel's flags, judge eligibility, the facts a judge is told) are evaluator.selectors.audit.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalogue.models import Kernel
from evaluator import enqueue
from evaluator.audit.findings import Finding
from evaluator.audit.isolated import audit_static_isolated
from evaluator.audit.normalise import (
    ImportReport,
    group_by_rule,
    hack_flag_records,
    judge_flag_fields,
    normalise_judge_answer,
    rule_flag_fields,
)
from evaluator.audit.runtime_signals import runtime_findings
from evaluator.models import AuditFlag, Evaluation
from evaluator.results_version import results_changed
from evaluator.selectors.audit import harness_facts, judge_eligible

log = logging.getLogger(__name__)

REVIEWED = {AuditFlag.Review.CONFIRMED, AuditFlag.Review.DISMISSED, AuditFlag.Review.LEGITIMATE}
# Sources whose agreement corroborates a flag (docs/protocol.md §7: "a second judge or a runtime signal").
CORROBORATING_SOURCES = {AuditFlag.Source.JUDGE, AuditFlag.Source.IMPORT, AuditFlag.Source.RUNTIME}


class ReviewError(ValueError):
    """A review action that is not allowed (unknown action, missing note)."""


# --- Flags from findings ----------------------------------------------------------------------------------------


def _replace_flags(
    *, kernel: Kernel, source: str, findings: list[Finding], scope: Q | None = None, raw_extra: dict | None = None
) -> list[AuditFlag]:
    """Replace this source's unreviewed flags on a kernel by fresh ones; reviewed flags (and their rules) stay."""
    existing = AuditFlag.objects.filter(kernel=kernel, source=source)
    if scope is not None:
        existing = existing.filter(scope)
    reviewed_rules = set(existing.filter(review_state__in=REVIEWED).values_list("source_name", flat=True))
    existing.exclude(review_state__in=REVIEWED).delete()
    created = []
    for rule, group in group_by_rule(findings).items():
        if rule in reviewed_rules:
            continue  # a person already decided about this rule on this kernel
        fields = rule_flag_fields(rule, group)
        fields["raw"].update(raw_extra or {})
        created.append(AuditFlag(kernel=kernel, source=source, **fields))
    return AuditFlag.objects.bulk_create(created)


def kernel_audit_static(*, kernel_id: int) -> list[AuditFlag]:
    """Run the static layer (own rules + KernelGuard) on one kernel and store its findings as `rule` flags.

    The source is untrusted, so it is parsed in a child process under memory and time limits (a file that defeats
    the parser gets an `audit_error` flag instead of taking the worker down). Corroboration runs here as well as
    after the runtime audit, so the result does not depend on which of the two finishes first.
    """
    kernel = Kernel.objects.select_related("problem").get(pk=kernel_id)
    findings = audit_static_isolated(kernel.source, kernel.problem.source)
    with transaction.atomic():
        kernel = Kernel.objects.select_for_update().get(pk=kernel_id)
        flags = _replace_flags(
            kernel=kernel,
            source=AuditFlag.Source.RULE,
            findings=findings,
            raw_extra={"kernel_sha256": kernel.sha256},
        )
        if kernel_flags_corroborate(kernel_id=kernel_id):
            for flag in flags:
                flag.refresh_from_db(fields=["review_state"])
    return flags


def kernels_audit_static(*, kernel_ids: Iterable[int]) -> int:
    """The one-line upload hook: static audit of many kernels; returns the number of flags stored."""
    total = 0
    for kernel_id in kernel_ids:
        total += len(kernel_audit_static(kernel_id=kernel_id))
    return total


@dataclass
class AuditRequestOutcome:
    """What an audit on demand did: static flags stored, judges queued, and why none were when some were asked."""

    static_flags: int = 0
    judges_asked: bool = False
    judges_queued: list[str] = field(default_factory=list)
    config_error: str = ""  # the judges' configuration is broken (JudgeConfigError)
    no_judges: str = ""  # judges were asked but none is configured under that name: judge_status().message


def kernel_audit_request(
    *, kernel_id: int, static: bool = True, judges: bool = True, judge_name: str | None = None, force: bool = False
) -> AuditRequestOutcome:
    """The one "audit now" path (staff, from the API and the inspector): re-run the static layer now and/or queue
    the LLM judges (all of them, or `judge_name`). Never raises for the judges' configuration: it says so."""
    from evaluator.audit.config import judge_status
    from evaluator.audit.judges import JudgeConfigError

    outcome = AuditRequestOutcome(judges_asked=judges or bool(judge_name))
    if static:
        outcome.static_flags = len(kernel_audit_static(kernel_id=kernel_id))
    if outcome.judges_asked:
        try:
            outcome.judges_queued = judges_enqueue(kernel_id=kernel_id, judge_name=judge_name or None, force=force)
        except JudgeConfigError as exc:
            outcome.config_error = str(exc)
        else:
            if not outcome.judges_queued:
                outcome.no_judges = judge_status().message
    return outcome


@transaction.atomic
def kernel_audit_runtime(*, evaluation_id: int, enqueue_judges: bool = True) -> list[AuditFlag]:
    """Turn an evaluation's runtime signals into `runtime` flags, corroborate, and enqueue judges if eligible.

    Called by the pipeline after it stores a result. Re-running replaces the unreviewed runtime flags of the same
    hardware kind.
    """
    evaluation = Evaluation.objects.select_related("kernel").get(pk=evaluation_id)
    record = evaluation.result if isinstance(evaluation.result, dict) else {}
    findings = runtime_findings(record, speedup=evaluation.speedup)
    flags = _replace_flags(
        kernel=evaluation.kernel,
        source=AuditFlag.Source.RUNTIME,
        findings=findings,
        scope=Q(raw__hardware=evaluation.hardware),
        raw_extra={"evaluation_id": evaluation.pk, "hardware": evaluation.hardware},
    )
    kernel_flags_corroborate(kernel_id=evaluation.kernel_id)
    if enqueue_judges and judge_eligible(evaluation):
        judges_enqueue(kernel_id=evaluation.kernel_id, evaluation_id=evaluation.pk)
    return flags


# --- Corroboration and review -----------------------------------------------------------------------------------


@transaction.atomic
def kernel_flags_corroborate(*, kernel_id: int) -> int:
    """Mark `suspected` flags `corroborated` when an independent source agrees.

    Agreement: another flag on the same kernel, from a judge (a different judge name), an imported judge result or
    a runtime signal, with verdict suspicious/hack and not dismissed or marked legitimate. Static rules do not
    corroborate each other (they are one source), but a judge or runtime signal corroborates them. Returns the
    number of flags changed.
    """
    flags = list(
        AuditFlag.objects.select_for_update()
        .filter(kernel_id=kernel_id, verdict__in=[AuditFlag.Verdict.SUSPICIOUS, AuditFlag.Verdict.HACK])
        .exclude(review_state__in=[AuditFlag.Review.DISMISSED, AuditFlag.Review.LEGITIMATE])
    )
    to_update = []
    for flag in flags:
        if flag.review_state != AuditFlag.Review.SUSPECTED:
            continue
        if any(
            other.pk != flag.pk
            and other.source in CORROBORATING_SOURCES
            and (other.source, other.source_name) != (flag.source, flag.source_name)
            and not (other.source == flag.source == AuditFlag.Source.RUNTIME)
            for other in flags
        ):
            flag.review_state = AuditFlag.Review.CORROBORATED
            to_update.append(flag)
    AuditFlag.objects.bulk_update(to_update, ["review_state"])
    return len(to_update)


REVIEW_ACTIONS = {
    "confirm": AuditFlag.Review.CONFIRMED,
    "dismiss": AuditFlag.Review.DISMISSED,
    "legitimate": AuditFlag.Review.LEGITIMATE,
    "reopen": AuditFlag.Review.SUSPECTED,
}


@transaction.atomic
def flag_review(*, flag_id: int, user: Any, action: str, note: str) -> AuditFlag:
    """A staff decision on one flag: confirm (hack: leaves the rankings), dismiss, legitimate, or reopen.

    The caller checks permissions (views and API require staff); the note is required so every decision explains
    itself.
    """
    if action not in REVIEW_ACTIONS:
        raise ReviewError(f"unknown action {action!r}; use one of {', '.join(REVIEW_ACTIONS)}")
    note = (note or "").strip()
    if not note:
        raise ReviewError("a review note is required")
    flag = AuditFlag.objects.select_for_update().get(pk=flag_id)
    flag.review_state = REVIEW_ACTIONS[action]
    flag.review_note = note[:5000]
    flag.reviewed_by = user if getattr(user, "is_authenticated", False) else None
    flag.reviewed_at = timezone.now()
    flag.save(update_fields=["review_state", "review_note", "reviewed_by", "reviewed_at"])
    if action == "reopen":
        kernel_flags_corroborate(kernel_id=flag.kernel_id)
        flag.refresh_from_db()
    transaction.on_commit(results_changed)  # cached boards go stale
    return flag


# --- LLM judges -------------------------------------------------------------------------------------------------


def judges_enqueue(
    *, kernel_id: int, judge_name: str | None = None, evaluation_id: int | None = None, force: bool = False
) -> list[str]:
    """Queue judge tasks (after commit) for one kernel; returns the judge names queued ([] without judges)."""
    from evaluator.audit.config import configured_judges

    judge_kernel_task = enqueue.task(enqueue.JUDGE_KERNEL)

    names = [j.name for j in configured_judges() if judge_name in (None, j.name)]
    for name in names:
        transaction.on_commit(
            functools.partial(
                judge_kernel_task.delay, kernel_id, judge_name=name, evaluation_id=evaluation_id, force=force
            )
        )
    return names


def kernel_judge(
    *, kernel_id: int, judge_name: str, evaluation_id: int | None = None, force: bool = False, client: Any = None
) -> AuditFlag | None:
    """Ask one configured judge about one kernel and store its verdict as a `judge` flag.

    Idempotent: a kernel already judged by this judge (same kernel sha256) is skipped unless `force`. A failed call
    (timeout, server error, invalid answer after repairs) is stored as an info flag whose rationale starts with
    "audit_error", so the inspector shows that the audit was attempted and why it has no verdict.
    """
    from evaluator.audit.config import configured_judges
    from evaluator.audit.judges import run_judge

    config = next((j for j in configured_judges() if j.name == judge_name), None)
    if config is None:
        raise ValueError(f"no judge named {judge_name!r} is configured")
    kernel = Kernel.objects.select_related("problem").get(pk=kernel_id)
    done = AuditFlag.objects.filter(
        kernel=kernel, source=AuditFlag.Source.JUDGE, source_name=judge_name, raw__kernel_sha256=kernel.sha256
    )
    if not force and done.filter(raw__status="ok").exists():
        return None
    evaluation = None
    if evaluation_id is not None:
        evaluation = Evaluation.objects.filter(pk=evaluation_id).first()
    # The network call happens outside any transaction: it may take minutes.
    outcome = run_judge(
        config,
        kernel_source=kernel.source,
        problem_source=kernel.problem.source,
        harness_facts=harness_facts(kernel, evaluation),
        client=client,
    )
    raw = {**outcome.to_dict(), "kernel_sha256": kernel.sha256, "evaluation_id": evaluation_id}
    with transaction.atomic():
        done.exclude(review_state__in=REVIEWED).delete()
        if not outcome.ok or outcome.answer is None:
            flag = AuditFlag.objects.create(
                kernel=kernel,
                source=AuditFlag.Source.JUDGE,
                source_name=judge_name,
                verdict=AuditFlag.Verdict.INFO,
                severity=AuditFlag.Severity.INFO,
                rationale=f"audit_error: {outcome.error}",
                raw=raw,
            )
            return flag
        flag = _judge_flag(
            kernel=kernel, source=AuditFlag.Source.JUDGE, source_name=judge_name, answer=outcome.answer, raw=raw
        )
        kernel_flags_corroborate(kernel_id=kernel.pk)
    flag.refresh_from_db()
    return flag


def _judge_flag(*, kernel: Kernel, source: str, source_name: str, answer: dict, raw: dict) -> AuditFlag:
    return AuditFlag.objects.create(
        kernel=kernel, source=source, source_name=source_name[:200], raw=raw, **judge_flag_fields(answer)
    )


# --- Imported judge results -------------------------------------------------------------------------------------


@transaction.atomic
def judge_result_import(*, kernel_id: int, source_name: str, record: dict, origin: str = "") -> AuditFlag:
    """Store one externally produced judge result (API or import command) as an `import` flag.

    Raises ValueError with the validation errors when the record does not fit the schema. Re-importing the same
    judge's result for a kernel replaces its unreviewed flag.
    """
    kernel = Kernel.objects.select_for_update(of=("self",)).get(pk=kernel_id)
    answer, dropped, errors = normalise_judge_answer(record, kernel.source)
    if errors:
        raise ValueError("; ".join(errors))
    existing = AuditFlag.objects.filter(kernel=kernel, source=AuditFlag.Source.IMPORT, source_name=source_name[:200])
    existing.exclude(review_state__in=REVIEWED).delete()
    raw = {
        "status": "ok",
        "record": record,
        "dropped_evidence": dropped,
        "origin": origin,
        "kernel_sha256": kernel.sha256,
    }
    flag = _judge_flag(kernel=kernel, source=AuditFlag.Source.IMPORT, source_name=source_name, answer=answer, raw=raw)
    kernel_flags_corroborate(kernel_id=kernel.pk)
    flag.refresh_from_db()
    return flag


def hack_flags_import(
    *, data: Any, llm_name: str, submission_id: int | None = None, judge_name: str = "imported"
) -> ImportReport:
    """Import judge results (the paper's hack_flags.json style) for one LLM's kernels.

    Each record: {level, problem_id, sample, llm?, verdict, classes, evidence, rationale, judge?, confidence?}. A
    record is matched to the kernel of that LLM with that (level, problem_id, sample), in `submission_id` when
    given, else in the LLM's most recent submission that has it. Records for another LLM are skipped.
    """
    report = ImportReport()
    for index, record in enumerate(hack_flag_records(data)):
        label = str(record.get("key") or f"record {index}")
        if record.get("llm") and str(record["llm"]) != llm_name:
            report.skipped.append(f"{label}: llm {record['llm']!r} is not {llm_name!r}")
            continue
        try:
            level, problem_id = int(record["level"]), int(record["problem_id"])
            sample = int(record.get("sample", 0) or 0)
        except (KeyError, TypeError, ValueError):
            report.errors.append(f"{label}: needs integer level and problem_id")
            continue
        kernels = Kernel.objects.filter(
            llm__name=llm_name, problem__level=level, problem__problem_id=problem_id, sample=sample
        )
        if submission_id is not None:
            kernels = kernels.filter(submission_id=submission_id)
        kernel = kernels.order_by("-submission__created_at", "-pk").first()
        if kernel is None:
            report.skipped.append(f"{label}: no kernel of {llm_name} for L{level}/{problem_id} sample {sample}")
            continue
        name = str(record.get("judge") or judge_name)
        try:
            flag = judge_result_import(
                kernel_id=kernel.pk, source_name=f"import:{name}", record=record, origin="hack_flags"
            )
        except ValueError as exc:
            report.errors.append(f"{label}: {exc}")
            continue
        report.created.append(flag.pk)
    return report
