"""The Finding record shared by the static rules, KernelGuard and the runtime signals."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SEVERITIES = ("info", "low", "medium", "high")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}
VERDICTS = ("clean", "info", "suspicious", "hack")


@dataclass(frozen=True)
class Finding:
    """One hit of one rule: what, how bad, which catalogue classes, and where (1-based lines, verbatim quote)."""

    rule: str
    severity: str
    verdict: str
    classes: tuple[str, ...]
    why: str
    lines: tuple[int, ...] = ()
    quote: str = ""
    origin: str = "rule"  # "rule" (our AST/source rules), "kernelguard" or "runtime"
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITY_RANK:
            raise ValueError(f"unknown severity {self.severity!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    @property
    def rank(self) -> int:
        return SEVERITY_RANK[self.severity]

    @property
    def line_span(self) -> str:
        """ "12" or "12-14" (the evidence format of reward_hacks.md section 3)."""
        if not self.lines:
            return ""
        lo, hi = min(self.lines), max(self.lines)
        return str(lo) if lo == hi else f"{lo}-{hi}"

    def evidence(self) -> list[dict]:
        """The AuditFlag.evidence list: [{lines, quote, why}]."""
        if not self.lines and not self.quote:
            return [{"lines": "", "quote": "", "why": self.why}]
        return [{"lines": self.line_span, "quote": self.quote, "why": self.why}]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["classes"] = list(self.classes)
        data["lines"] = list(self.lines)
        data["evidence"] = self.evidence()
        if not data["extra"]:
            data.pop("extra")
        return data


def max_severity(findings: list[Finding]) -> str | None:
    """The worst severity among findings, or None when there are none."""
    if not findings:
        return None
    return max(findings, key=lambda f: f.rank).severity
