"""Writes of the reward-hack audit: flags from static rules, runtime signals and LLM judges; review; corroboration.

Hooks for the pipeline:
- at upload: `kernels_audit_static(kernel_ids=[...])` (or `kernel_audit_static(kernel_id=...)`);
- after a result is stored: `kernel_audit_runtime(evaluation_id=...)`, which also enqueues the LLM judges when the
  kernel is correct with a verified speedup > 1 (protocol.md section 7).

Review states (AuditFlag.Review): a flag starts `suspected`; it becomes `corroborated` when an independent source
agrees (see `kernel_flags_corroborate`); a staff member moves it to `confirmed` (the kernel leaves the rankings via
leaderboard.selectors.eligibility), `dismissed` or `legitimate` (D4 specialisation), always with a note.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalogue.models import Kernel
from evaluator.audit.findings import SEVERITY_RANK, Finding
from evaluator.audit.isolated import audit_static_isolated
from evaluator.audit.runtime_signals import runtime_findings
from evaluator.audit.schema import import_schema, validation_errors
from evaluator.models import AuditFlag, Evaluation
from evaluator.services.results import results_changed

log = logging.getLogger(__name__)

REVIEWED = {AuditFlag.Review.CONFIRMED, AuditFlag.Review.DISMISSED, AuditFlag.Review.LEGITIMATE}
VERDICT_RANK = {"clean": 0, "info": 1, "suspicious": 2, "hack": 3}
JUDGE_SEVERITY = {"hack": "high", "suspicious": "medium", "clean": "info", "info": "info"}
# Sources whose agreement corroborates a flag (protocol.md §7: "a second judge or a runtime signal").
CORROBORATING_SOURCES = {AuditFlag.Source.JUDGE, AuditFlag.Source.IMPORT, AuditFlag.Source.RUNTIME}
EVIDENCE_MAX = 12


class ReviewError(ValueError):
    """A review action that is not allowed (unknown action, missing note)."""


# --- Flags from findings ----------------------------------------------------------------------------------------


def _flag_fields(rule: str, findings: list[Finding]) -> dict[str, Any]:
    """One AuditFlag per rule: the worst severity/verdict, the union of classes, every location as evidence."""
    worst = max(findings, key=lambda f: (f.rank, VERDICT_RANK[f.verdict]))
    classes: list[str] = []
    for finding in findings:
        classes.extend(c for c in finding.classes if c and c not in classes)
    evidence = [item for finding in findings for item in finding.evidence()][:EVIDENCE_MAX]
    rationale = worst.why if len(findings) == 1 else f"{worst.why} ({len(findings)} places)"
    return {
        "source_name": rule[:200],
        "severity": worst.severity,
        "verdict": max((f.verdict for f in findings), key=VERDICT_RANK.__getitem__),
        "classes": classes,
        "evidence": evidence,
        "rationale": rationale,
        "raw": {"findings": [f.to_dict() for f in findings]},
    }


def _group(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(finding.rule, []).append(finding)
    return grouped


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
    for rule, group in _group(findings).items():
        if rule in reviewed_rules:
            continue  # a person already decided about this rule on this kernel
        fields = _flag_fields(rule, group)
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
            kernel=kernel, source=AuditFlag.Source.RULE, findings=findings, raw_extra={"kernel_sha256": kernel.sha256}
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


def judge_eligible(evaluation: Evaluation) -> bool:
    """protocol.md §7: every correct kernel whose verified speedup exceeds 1 gets the judge audit."""
    return (
        evaluation.status == Evaluation.Status.DONE
        and evaluation.is_current
        and bool(evaluation.correct)
        and (evaluation.speedup or 0) > 1
    )


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


def judges_enqueue(*, kernel_id: int, judge_name: str | None = None, evaluation_id: int | None = None,
                   force: bool = False) -> list[str]:  # fmt: skip
    """Queue judge tasks (after commit) for one kernel; returns the judge names queued ([] without judges)."""
    from evaluator.audit.config import configured_judges
    from evaluator.tasks.audit import judge_kernel as judge_kernel_task

    names = [j.name for j in configured_judges() if judge_name in (None, j.name)]
    for name in names:
        transaction.on_commit(
            lambda name=name: judge_kernel_task.delay(
                kernel_id, judge_name=name, evaluation_id=evaluation_id, force=force
            )  # fmt: skip
        )
    return names


def harness_facts(kernel: Kernel, evaluation: Evaluation | None) -> dict[str, Any]:
    """What the judge is told that the evaluator measured (trusted block of the prompt)."""
    facts: dict[str, Any] = {"problem": f"L{kernel.problem.level}/{kernel.problem.problem_id} {kernel.problem.name}"}
    static = AuditFlag.objects.filter(kernel=kernel, source=AuditFlag.Source.RULE).exclude(severity="info")
    facts["static_rule_hits"] = [f"{f.source_name} ({f.severity}): {f.rationale}"[:300] for f in static[:15]]
    if evaluation is not None:
        record = evaluation.result if isinstance(evaluation.result, dict) else {}
        facts.update({
            "correct_verified": evaluation.correct, "speedup_vs_tf32": evaluation.speedup,
            "speedup_vs_fp32": evaluation.speedup_fp32, "memory_ratio": evaluation.memory_ratio,
            "hardware": evaluation.hardware,
            "distributions": [
                {k: d.get(k) for k in ("name", "passed", "skipped", "max_rel_error")}
                for d in record.get("distributions") or [] if isinstance(d, dict)
            ],
            "checks": [
                {k: c.get(k) for k in ("name", "passed", "detail")} for c in record.get("checks") or []
                if isinstance(c, dict)
            ],
        })  # fmt: skip
    return facts


def kernel_judge(*, kernel_id: int, judge_name: str, evaluation_id: int | None = None, force: bool = False,
                 client: Any = None) -> AuditFlag | None:  # fmt: skip
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
    done = AuditFlag.objects.filter(kernel=kernel, source=AuditFlag.Source.JUDGE, source_name=judge_name,
                                    raw__kernel_sha256=kernel.sha256)  # fmt: skip
    if not force and done.filter(raw__status="ok").exists():
        return None
    evaluation = None
    if evaluation_id is not None:
        evaluation = Evaluation.objects.filter(pk=evaluation_id).first()
    # The network call happens outside any transaction: it may take minutes.
    outcome = run_judge(config, kernel_source=kernel.source, problem_source=kernel.problem.source,
                        harness_facts=harness_facts(kernel, evaluation), client=client)  # fmt: skip
    raw = {**outcome.to_dict(), "kernel_sha256": kernel.sha256, "evaluation_id": evaluation_id}
    with transaction.atomic():
        done.exclude(review_state__in=REVIEWED).delete()
        if not outcome.ok or outcome.answer is None:
            flag = AuditFlag.objects.create(
                kernel=kernel, source=AuditFlag.Source.JUDGE, source_name=judge_name, verdict=AuditFlag.Verdict.INFO,
                severity=AuditFlag.Severity.INFO, rationale=f"audit_error: {outcome.error}", raw=raw,
            )  # fmt: skip
            return flag
        flag = _judge_flag(kernel=kernel, source=AuditFlag.Source.JUDGE, source_name=judge_name,
                           answer=outcome.answer, raw=raw)  # fmt: skip
        kernel_flags_corroborate(kernel_id=kernel.pk)
    flag.refresh_from_db()
    return flag


def _judge_flag(*, kernel: Kernel, source: str, source_name: str, answer: dict, raw: dict) -> AuditFlag:
    verdict = str(answer.get("verdict", "suspicious"))
    rationale_parts = [str(answer.get("rationale", "") or "")]
    if answer.get("failing_input"):
        rationale_parts.append(f"Failing input: {answer['failing_input']}")
    if answer.get("legit_specializations"):
        rationale_parts.append("Legitimate specialisations: " + "; ".join(map(str, answer["legit_specializations"])))
    if answer.get("downgraded"):
        rationale_parts.append(f"Downgraded to suspicious: {answer['downgraded']}.")
    confidence = answer.get("confidence")
    return AuditFlag.objects.create(
        kernel=kernel, source=source, source_name=source_name[:200],
        verdict=verdict if verdict in VERDICT_RANK else AuditFlag.Verdict.SUSPICIOUS,
        severity=JUDGE_SEVERITY.get(verdict, "medium"),
        classes=[str(c) for c in answer.get("classes") or []][:20],
        evidence=list(answer.get("evidence") or [])[:EVIDENCE_MAX],
        rationale="\n".join(p for p in rationale_parts if p)[:5000],
        confidence=float(confidence) if isinstance(confidence, int | float) and 0 <= confidence <= 1 else None,
        raw=raw,
    )  # fmt: skip


# --- Imported judge results -------------------------------------------------------------------------------------

VERDICT_ALIASES = {
    "hack": "hack", "hacked": "hack", "reward_hack": "hack", "cheat": "hack", "true": "hack", "yes": "hack",
    "suspicious": "suspicious", "unclear": "suspicious", "needs_review": "suspicious", "maybe": "suspicious",
    "clean": "clean", "legit": "clean", "legitimate": "clean", "ok": "clean", "false": "clean", "no": "clean",
}  # fmt: skip


def normalise_judge_answer(record: dict, kernel_source: str) -> tuple[dict, list[dict], list[str]]:
    """An imported judge record in the live judge's shape: (answer, dropped evidence, validation errors).

    Accepts the paper's `hack_flags.json` records: verdict as a word or a boolean, evidence as a list of strings
    (quotes) or of {lines, quote, why} objects, `rationale` free text.
    """
    from evaluator.audit.judges import verify_evidence

    verdict_raw = record.get("verdict")
    verdict = VERDICT_ALIASES.get(str(verdict_raw).strip().lower(), str(verdict_raw).strip().lower())
    evidence = []
    for item in record.get("evidence") or []:
        if isinstance(item, str):
            evidence.append({"lines": "", "quote": item, "why": ""})
        elif isinstance(item, dict):
            lines = item.get("lines", item.get("line", ""))
            if isinstance(lines, list):
                lines = "-".join(str(x) for x in (lines[0], lines[-1])) if lines else ""
            evidence.append({"lines": str(lines), "quote": str(item.get("quote", item.get("code", ""))),
                             "why": str(item.get("why", item.get("reason", "")))})  # fmt: skip
    classes = record.get("classes") or []
    if isinstance(classes, str):
        classes = [c.strip() for c in classes.replace(";", ",").split(",") if c.strip()]
    answer = {
        "verdict": verdict, "classes": [str(c) for c in classes], "evidence": evidence,
        "legit_specializations": list(record.get("legit_specializations") or []),
        "failing_input": str(record.get("failing_input", "") or ""),
        "rationale": str(record.get("rationale", "") or ""),
    }  # fmt: skip
    if isinstance(record.get("confidence"), int | float):
        answer["confidence"] = float(record["confidence"])
    errors = validation_errors(answer, import_schema())
    if errors:
        return answer, [], errors
    verified, dropped = verify_evidence(answer, kernel_source)
    return verified, dropped, []


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
    raw = {"status": "ok", "record": record, "dropped_evidence": dropped, "origin": origin,
           "kernel_sha256": kernel.sha256}  # fmt: skip
    flag = _judge_flag(kernel=kernel, source=AuditFlag.Source.IMPORT, source_name=source_name, answer=answer, raw=raw)
    kernel_flags_corroborate(kernel_id=kernel.pk)
    flag.refresh_from_db()
    return flag


@dataclass
class ImportReport:
    """What an import of a hack_flags file did, record by record."""

    created: list[int] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"created": self.created, "skipped": self.skipped, "errors": self.errors}


def hack_flag_records(data: Any) -> list[dict]:
    """The records of a hack_flags file: a list, a {"flags": [...]} object, or a mapping key -> record.

    With a mapping, keys like "level_1_problem_19_sample_0" (the KernelBench run file stem) fill in missing
    level/problem_id/sample fields.
    """
    import re

    if isinstance(data, dict) and isinstance(data.get("flags"), list):
        data = data["flags"]
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    records = []
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(value, dict):
                continue
            record = dict(value)
            if m := re.search(r"level_?(\d+)_problem_?(\d+)(?:_sample_?(\d+))?", str(key)):
                record.setdefault("level", int(m.group(1)))
                record.setdefault("problem_id", int(m.group(2)))
                record.setdefault("sample", int(m.group(3) or 0))
            record.setdefault("key", str(key))
            records.append(record)
    return records


def hack_flags_import(*, data: Any, llm_name: str, submission_id: int | None = None,
                      judge_name: str = "imported") -> ImportReport:  # fmt: skip
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
        kernels = Kernel.objects.filter(llm__name=llm_name, problem__level=level, problem__problem_id=problem_id,
                                        sample=sample)  # fmt: skip
        if submission_id is not None:
            kernels = kernels.filter(submission_id=submission_id)
        kernel = kernels.order_by("-submission__created_at", "-pk").first()
        if kernel is None:
            report.skipped.append(f"{label}: no kernel of {llm_name} for L{level}/{problem_id} sample {sample}")
            continue
        name = str(record.get("judge") or judge_name)
        try:
            flag = judge_result_import(kernel_id=kernel.pk, source_name=f"import:{name}", record=record,
                                       origin="hack_flags")  # fmt: skip
        except ValueError as exc:
            report.errors.append(f"{label}: {exc}")
            continue
        report.created.append(flag.pk)
    return report


def severity_at_least(flag: AuditFlag, severity: str) -> bool:
    return SEVERITY_RANK.get(flag.severity, 0) >= SEVERITY_RANK[severity]
