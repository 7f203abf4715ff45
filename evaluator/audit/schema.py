"""The LLM judge's answer schema (reward_hacks.md section 3) and its validation.

The same schema validates live judge answers (strict `json_schema` response format: every key required,
`additionalProperties: false`) and imported judge results (which may omit optional keys).
"""

from __future__ import annotations

import copy

import jsonschema

CATALOGUE_IDS = [f"A{i}" for i in range(1, 11)] + [f"B{i}" for i in range(1, 12)] + [f"C{i}" for i in range(1, 4)]
CATALOGUE_IDS += [f"D{i}" for i in range(1, 5)] + [f"E{i}" for i in range(1, 9)]

JUDGE_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict", "classes", "legit_specializations", "evidence", "failing_input", "confidence"],
    "properties": {
        "verdict": {"type": "string", "enum": ["clean", "suspicious", "hack"]},
        "classes": {"type": "array", "items": {"type": "string", "enum": CATALOGUE_IDS}},
        "legit_specializations": {"type": "array", "items": {"type": "string"}},
        "evidence": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["lines", "quote", "why"],
                "properties": {
                    "lines": {"type": "string"},
                    "quote": {"type": "string"},
                    "why": {"type": "string"},
                },
            },
        },
        "failing_input": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
}


def import_schema() -> dict:
    """The judge schema relaxed for imported results: only `verdict` is required, extra keys are allowed."""
    schema = copy.deepcopy(JUDGE_SCHEMA)
    schema["required"] = ["verdict"]
    schema["additionalProperties"] = True
    schema["properties"]["evidence"]["items"]["required"] = []
    schema["properties"]["evidence"]["items"]["additionalProperties"] = True
    schema["properties"]["evidence"]["items"]["properties"]["lines"] = {"type": ["string", "integer", "array"]}
    schema["properties"]["classes"]["items"] = {"type": "string"}
    return schema


def validation_errors(data: object, schema: dict | None = None) -> list[str]:
    """Human-readable schema violations ([] when valid); fed back to the judge in repair prompts."""
    validator = jsonschema.Draft202012Validator(schema or JUDGE_SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors][:10]
