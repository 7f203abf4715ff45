"""LLM judges through any OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp server, hosted APIs).

`settings.AUDIT_JUDGES_JSON` holds a JSON list of `{name, base_url, model, api_key_env}`. One call per kernel and
judge, temperature 0, `response_format` json_schema (strict); when the server rejects json_schema we retry with
`json_object` and the schema in the prompt. The answer is validated with jsonschema, with at most two repair
rounds; after that the outcome is an `audit_error`. Evidence whose quote is not verbatim in the kernel is dropped.

This module has no Django imports: the service passes the configuration in.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from evaluator.audit.prompt import build_messages, repair_message
from evaluator.audit.schema import JUDGE_SCHEMA, validation_errors

MAX_REPAIRS = 2


@dataclass(frozen=True)
class JudgeConfig:
    name: str
    base_url: str
    model: str
    api_key_env: str = ""
    timeout: float = 120.0
    temperature: float = 0.0

    @property
    def api_key(self) -> str:
        # Local servers (vLLM, llama.cpp) accept any key; the client library insists on a non-empty one.
        return (os.environ.get(self.api_key_env, "") if self.api_key_env else "") or "none"


@dataclass
class JudgeOutcome:
    """What one judge said about one kernel (status "ok") or why it could not say it (status "audit_error")."""

    judge: str
    model: str
    status: str
    answer: dict | None = None
    mode: str = "json_schema"  # or "json_object" after the fallback
    attempts: int = 0
    error: str = ""
    dropped_evidence: list[dict] = field(default_factory=list)
    raw_texts: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return {
            "judge": self.judge,
            "model": self.model,
            "status": self.status,
            "answer": self.answer,
            "mode": self.mode,
            "attempts": self.attempts,
            "error": self.error,
            "dropped_evidence": self.dropped_evidence,
        }


class JudgeConfigError(ValueError):
    pass


def parse_judges(raw: str | list | None, *, timeout: float = 120.0) -> list[JudgeConfig]:
    """The configured judges from AUDIT_JUDGES_JSON (a JSON string or an already-parsed list)."""
    if not raw:
        return []
    try:
        items = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise JudgeConfigError(f"AUDIT_JUDGES is not valid JSON: {exc}") from exc
    if not isinstance(items, list):
        raise JudgeConfigError("AUDIT_JUDGES must be a JSON list of {name, base_url, model, api_key_env}")
    judges = []
    for item in items:
        if not isinstance(item, dict) or not all(item.get(k) for k in ("name", "base_url", "model")):
            raise JudgeConfigError(f"judge entry needs name, base_url and model: {item!r}")
        judges.append(
            JudgeConfig(
                name=str(item["name"]),
                base_url=str(item["base_url"]),
                model=str(item["model"]),
                api_key_env=str(item.get("api_key_env", "")),
                timeout=float(item.get("timeout", timeout)),
            )
        )
    if len({j.name for j in judges}) != len(judges):
        raise JudgeConfigError("judge names must be unique")
    return judges


def _client(config: JudgeConfig) -> Any:
    from openai import OpenAI

    # One retry inside the client covers a dropped connection; longer outages become an audit_error.
    return OpenAI(base_url=config.base_url, api_key=config.api_key, timeout=config.timeout, max_retries=1)


def _schema_rejected(exc: Exception) -> bool:
    """The server does not support response_format json_schema (HTTP 400/422 naming it)."""
    status = getattr(exc, "status_code", None)
    text = str(exc).lower()
    return status in {400, 404, 422, 501} and ("json_schema" in text or "response_format" in text or "schema" in text)


def _extract_json(text: str) -> object:
    """The JSON object in a reply; tolerates ```json fences and prose around one object."""
    text = text.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.S)
    if fenced:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start != -1 and end > start:
            return json.loads(text[start : end + 1])
        raise


def run_judge(
    config: JudgeConfig,
    *,
    kernel_source: str,
    problem_source: str | None = None,
    harness_facts: dict | None = None,
    client: Any = None,
) -> JudgeOutcome:
    """Ask one judge about one kernel. Never raises for server/answer problems: they become `audit_error`."""
    from openai import APIConnectionError, APIStatusError, APITimeoutError

    client = client or _client(config)
    outcome = JudgeOutcome(judge=config.name, model=config.model, status="audit_error")
    schema_in_prompt = False
    response_format: dict = {
        "type": "json_schema",
        "json_schema": {"name": "kernel_audit", "strict": True, "schema": JUDGE_SCHEMA},
    }
    messages = build_messages(kernel_source=kernel_source, problem_source=problem_source, harness_facts=harness_facts)
    repairs = 0
    while True:
        outcome.attempts += 1
        try:
            reply = client.chat.completions.create(
                model=config.model, temperature=config.temperature, messages=messages, response_format=response_format
            )
        except APITimeoutError:
            outcome.error = f"judge {config.name} timed out after {config.timeout:g} s"
            return outcome
        except APIConnectionError as exc:
            outcome.error = f"judge {config.name} unreachable: {type(exc).__name__}"
            return outcome
        except APIStatusError as exc:
            if not schema_in_prompt and _schema_rejected(exc):
                # Older servers: no json_schema. Ask for a JSON object and put the schema in the prompt instead.
                schema_in_prompt = True
                outcome.mode = "json_object"
                response_format = {"type": "json_object"}
                messages = build_messages(
                    kernel_source=kernel_source,
                    problem_source=problem_source,
                    harness_facts=harness_facts,
                    schema_in_prompt=True,
                )
                continue
            outcome.error = f"judge {config.name} answered HTTP {exc.status_code}"
            return outcome
        text = (reply.choices[0].message.content or "") if reply.choices else ""
        outcome.raw_texts.append(text[:20000])
        try:
            answer = _extract_json(text)
            errors = validation_errors(answer)
        except json.JSONDecodeError as exc:
            answer, errors = None, [f"not JSON ({exc.msg})"]
        if not errors:
            assert isinstance(answer, dict)
            outcome.answer, outcome.dropped_evidence = verify_evidence(answer, kernel_source)
            outcome.status = "ok"
            return outcome
        if repairs >= MAX_REPAIRS:
            outcome.error = f"judge {config.name}: invalid answer after {MAX_REPAIRS} repairs: " + "; ".join(errors)
            return outcome
        repairs += 1
        messages = [*messages, {"role": "assistant", "content": text}, repair_message(errors, schema_in_prompt)]


def verify_evidence(answer: dict, kernel_source: str) -> tuple[dict, list[dict]]:
    """Keep only evidence whose quote occurs verbatim in the kernel; fix its line numbers from the source.

    A "hack" verdict left without any verifiable evidence is downgraded to "suspicious" (needs human review).
    """
    lines = kernel_source.splitlines()
    kept: list[dict] = []
    dropped: list[dict] = []
    for item in answer.get("evidence") or []:
        quote = str(item.get("quote", "")).strip() if isinstance(item, dict) else ""
        if not quote or quote not in kernel_source:
            dropped.append(item if isinstance(item, dict) else {"quote": str(item)})
            continue
        found = [n for n, text in enumerate(lines, start=1) if quote.splitlines()[0] in text]
        claimed = _parse_lines(item.get("lines"))
        if found and not (set(claimed) & set(found)):
            span = (
                f"{found[0]}"
                if len(quote.splitlines()) == 1
                else f"{found[0]}-{found[0] + len(quote.splitlines()) - 1}"
            )
            item = {**item, "lines": span}
        kept.append({"lines": str(item.get("lines", "")), "quote": quote, "why": str(item.get("why", ""))})
    result = {**answer, "evidence": kept}
    if result.get("verdict") == "hack" and not kept:
        result["verdict"] = "suspicious"
        result["downgraded"] = "hack verdict without verbatim evidence"
    return result, dropped


def _parse_lines(value: object) -> list[int]:
    """ "12", "12-14", 12, [12, 13] -> line numbers."""
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int)]
    numbers: list[int] = []
    for part in re.findall(r"\d+(?:\s*-\s*\d+)?", str(value or "")):
        if "-" in part:
            lo, hi = (int(x) for x in part.split("-"))
            numbers.extend(range(lo, min(hi, lo + 200) + 1))
        else:
            numbers.append(int(part))
    return numbers
