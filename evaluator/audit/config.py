"""The audit's Django settings, read in one place (the rest of the package stays Django-free)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from evaluator.audit.judges import JudgeConfig, JudgeConfigError, parse_judges


@dataclass(frozen=True)
class JudgeStatus:
    """Whether LLM judges are available, for the API, the inspector and the CLI."""

    configured: bool
    judges: list[str] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict:
        return {"configured": self.configured, "judges": self.judges, "message": self.message}


def configured_judges() -> list[JudgeConfig]:
    """The judges of settings.AUDIT_JUDGES_JSON (env AUDIT_JUDGES); raises JudgeConfigError when malformed."""
    return parse_judges(getattr(settings, "AUDIT_JUDGES_JSON", "[]"), timeout=float(judge_timeout()))


def judge_timeout() -> int:
    return int(getattr(settings, "AUDIT_JUDGE_TIMEOUT", 120))


def judge_status() -> JudgeStatus:
    try:
        judges = configured_judges()
    except JudgeConfigError as exc:
        return JudgeStatus(configured=False, message=f"LLM judge configuration is invalid: {exc}")
    if not judges:
        return JudgeStatus(
            configured=False,
            message="No LLM judge is configured (set AUDIT_JUDGES to a JSON list of {name, base_url, model, "
            "api_key_env}); only static rules and runtime signals audit this kernel.",
        )
    names = [j.name for j in judges]
    return JudgeStatus(configured=True, judges=names, message=f"LLM judges configured: {', '.join(names)}.")
