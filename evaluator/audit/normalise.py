"""Pure shaping of audit results into flag fields: findings grouped per rule, a judge's answer, an imported
judge record, the records of a hack_flags.json document. No Django: the services store what these return."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evaluator.audit.findings import Finding
from evaluator.audit.judges import verify_evidence
from evaluator.audit.schema import import_schema, validation_errors

VERDICT_RANK = {"clean": 0, "info": 1, "suspicious": 2, "hack": 3}
JUDGE_SEVERITY = {"hack": "high", "suspicious": "medium", "clean": "info", "info": "info"}
EVIDENCE_MAX = 12
VERDICT_ALIASES = {
    "hack": "hack",
    "hacked": "hack",
    "reward_hack": "hack",
    "cheat": "hack",
    "true": "hack",
    "yes": "hack",
    "suspicious": "suspicious",
    "unclear": "suspicious",
    "needs_review": "suspicious",
    "maybe": "suspicious",
    "clean": "clean",
    "legit": "clean",
    "legitimate": "clean",
    "ok": "clean",
    "false": "clean",
    "no": "clean",
}


def group_by_rule(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(finding.rule, []).append(finding)
    return grouped


def rule_flag_fields(rule: str, findings: list[Finding]) -> dict[str, Any]:
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


def judge_flag_fields(answer: dict) -> dict[str, Any]:
    """The flag fields of a judge's (or an imported) answer: an unknown verdict reads as suspicious."""
    verdict = str(answer.get("verdict", "suspicious"))
    rationale_parts = [str(answer.get("rationale", "") or "")]
    if answer.get("failing_input"):
        rationale_parts.append(f"Failing input: {answer['failing_input']}")
    if answer.get("legit_specializations"):
        rationale_parts.append("Legitimate specialisations: " + "; ".join(map(str, answer["legit_specializations"])))
    if answer.get("downgraded"):
        rationale_parts.append(f"Downgraded to suspicious: {answer['downgraded']}.")
    confidence = answer.get("confidence")
    return {
        "verdict": verdict if verdict in VERDICT_RANK else "suspicious",
        "severity": JUDGE_SEVERITY.get(verdict, "medium"),
        "classes": [str(c) for c in answer.get("classes") or []][:20],
        "evidence": list(answer.get("evidence") or [])[:EVIDENCE_MAX],
        "rationale": "\n".join(p for p in rationale_parts if p)[:5000],
        "confidence": float(confidence) if isinstance(confidence, int | float) and 0 <= confidence <= 1 else None,
    }


def normalise_judge_answer(record: dict, kernel_source: str) -> tuple[dict, list[dict], list[str]]:
    """An imported judge record in the live judge's shape: (answer, dropped evidence, validation errors).

    Accepts the paper's `hack_flags.json` records: verdict as a word or a boolean, evidence as a list of strings
    (quotes) or of {lines, quote, why} objects, `rationale` free text.
    """
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
            evidence.append(
                {
                    "lines": str(lines),
                    "quote": str(item.get("quote", item.get("code", ""))),
                    "why": str(item.get("why", item.get("reason", ""))),
                }
            )
    classes = record.get("classes") or []
    if isinstance(classes, str):
        classes = [c.strip() for c in classes.replace(";", ",").split(",") if c.strip()]
    answer: dict[str, Any] = {
        "verdict": verdict,
        "classes": [str(c) for c in classes],
        "evidence": evidence,
        "legit_specializations": list(record.get("legit_specializations") or []),
        "failing_input": str(record.get("failing_input", "") or ""),
        "rationale": str(record.get("rationale", "") or ""),
    }
    if isinstance(record.get("confidence"), int | float):
        answer["confidence"] = float(record["confidence"])
    errors = validation_errors(answer, import_schema())
    if errors:
        return answer, [], errors
    verified, dropped = verify_evidence(answer, kernel_source)
    return verified, dropped, []


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
