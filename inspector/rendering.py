"""Pure helpers for the inspector: errors cut to size, judge evidence located in the source (the highlighting
itself is leaderboard.highlight, shared with the problem pages)."""

from __future__ import annotations

import re

ERROR_MAX_CHARS = 6000
ERROR_KEEP_LINES = 40
LINE_RANGE_RE = re.compile(r"^\s*(\d+)\s*(?:[-:\u2013]\s*(\d+))?\s*$")


def trim_error(text: str, *, max_chars: int = ERROR_MAX_CHARS, keep: int = ERROR_KEEP_LINES) -> str:
    """Keep the head and tail of a long compile/runtime log (the cause is usually at one end). Escaping is left to
    the template, so this returns plain text."""
    text = (text or "").strip()
    lines = text.splitlines()
    if len(lines) > 2 * keep:
        text = "\n".join([*lines[:keep], f"... {len(lines) - 2 * keep} lines trimmed ...", *lines[-keep:]])
    if len(text) > max_chars:
        half = max_chars // 2
        text = f"{text[:half]}\n... {len(text) - max_chars} characters trimmed ...\n{text[-half:]}"
    return text


def parse_lines(value: object) -> list[int]:
    """1-based line numbers from a judge's `lines`: 12, [12, 14], "12-15", "12, 14", {"start": 3, "end": 5}."""
    out: list[int] = []
    if isinstance(value, bool) or value is None:
        return out
    if isinstance(value, int):
        return [value] if value > 0 else []
    if isinstance(value, dict):
        start, end = value.get("start"), value.get("end", value.get("start"))
        if isinstance(start, int) and isinstance(end, int) and 0 < start <= end:
            return list(range(start, min(end, start + 500) + 1))
        return out
    if isinstance(value, str):
        for part in value.split(","):
            if m := LINE_RANGE_RE.match(part):
                start, end = int(m[1]), int(m[2] or m[1])
                if 0 < start <= end:
                    out.extend(range(start, min(end, start + 500) + 1))
        return out
    if isinstance(value, list | tuple):
        for item in value:
            out.extend(parse_lines(item))
    return out


def locate_quote(source: str, quote: str) -> list[int]:
    """Lines of `source` that contain the quote (first matching occurrence of each quoted line)."""
    lines = source.splitlines()
    found: list[int] = []
    for quoted in (q.strip() for q in (quote or "").splitlines()):
        if len(quoted) < 4:
            continue
        for i, line in enumerate(lines, 1):
            if quoted in line:
                found.append(i)
                break
    return found
