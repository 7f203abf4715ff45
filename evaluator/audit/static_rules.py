"""The static layer of the audit: our AST + source rules, plus KernelGuard, over one kernel file.

`audit_static(source, problem_source=None)` is pure (no Django, no torch, no I/O) and fast (milliseconds), so it
runs on every kernel at upload.
"""

from __future__ import annotations

from evaluator.audit.cuda_rules import NATIVE_RULES
from evaluator.audit.findings import Finding
from evaluator.audit.problem_rules import rule_problem_sizes
from evaluator.audit.python_facts import collect_python_facts
from evaluator.audit.python_rules import PYTHON_RULES
from evaluator.audit.source import KernelSource

# Findings at or above this severity make a kernel "flagged" by the static layer (used by the corpus metrics and
# the inspector's summary); info/low findings are labels.
FLAG_SEVERITIES = {"medium", "high"}


def audit_static(source: str, problem_source: str | None = None, *, kernelguard: bool = True) -> list[Finding]:
    """Run every static rule on a kernel file and return its findings, worst first.

    `problem_source` (the reference KernelBench file) enables the size rules; `kernelguard=False` skips the
    KernelGuard detectors (used to measure our own rules alone).
    """
    src = KernelSource.parse(source)
    findings: list[Finding] = []
    if src.tree is None:
        findings.append(
            Finding(
                rule="unparseable",
                severity="medium",
                verdict="suspicious",
                classes=("C3",),
                why=f"The kernel file is not valid Python ({src.syntax_error}).",
                lines=(),
            )
        )
    else:
        facts = collect_python_facts(src)
        assert facts is not None
        for rule in PYTHON_RULES:
            findings.extend(rule(src, facts))
    for native_rule in NATIVE_RULES:
        findings.extend(native_rule(src))
    if problem_source:
        findings.extend(rule_problem_sizes(src, problem_source))
    if kernelguard:
        from evaluator.audit.kernelguard_adapter import kernelguard_findings

        findings.extend(kernelguard_findings(source, src))
    return sort_findings(_dedupe(findings))


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per (rule, lines), keeping the most severe."""
    seen: set[tuple[str, tuple[int, ...]]] = set()
    out: list[Finding] = []
    for finding in sort_findings(findings):
        key = (finding.rule, finding.lines)
        if key in seen:
            continue
        seen.add(key)
        out.append(finding)
    return out


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-f.rank, f.lines[0] if f.lines else 0, f.rule))


def is_flagged(findings: list[Finding]) -> bool:
    """True when a finding is medium/high with a suspicious or hack verdict (what the corpus precision/recall
    counts as 'flagged'). Labels such as D1 "no custom kernel" (verdict info) do not count."""
    return any(f.severity in FLAG_SEVERITIES and f.verdict in {"suspicious", "hack"} for f in findings)
