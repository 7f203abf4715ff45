"""Parsing input nobody vouches for: JSON from bundles and request bodies, integers from query strings, labels.

One helper per class of input, so each rule is written once:
- `json_loads`: depth-limited (no RecursionError), finite numbers only (no NaN/Infinity, which no database's JSON
  type stores); with `strict_unicode`, no lone surrogates either (they cannot be encoded to UTF-8).
- `storable_json`: what may be kept from a parsed document in a JSON column (no NUL characters: PostgreSQL's jsonb
  rejects "\u0000").
- `strict_int`: ASCII digits only; `"²".isdigit()` is true, yet `int("²")` fails.
- `label`: a short `[a-z0-9_.-]` token (a hardware label) fit for queue names, cache keys and HTTP headers;
  `short_text`: a printable one-line value (a problem-set name in a query string).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_JSON_DEPTH = 64  # far beyond any bundle or API document; far below Python's recursion limit

# A JSON string (with its escapes), and the brackets left once strings are removed.
_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET_RE = re.compile(r"[\[\]{}]")
_DIGITS_RE = re.compile(r"[0-9]+", re.ASCII)
_LABEL_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,99}", re.ASCII)
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


class UntrustedJSONError(ValueError):
    """The document is refused; the message says why, in words fit to show the sender."""


def _depth_exceeds(text: str, max_depth: int) -> bool:
    depth = 0
    for match in _BRACKET_RE.finditer(_STRING_RE.sub("", text)):
        if match.group() in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def _reject_constant(name: str) -> Any:
    raise UntrustedJSONError(f"{name} is not a JSON number (numbers must be finite)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UntrustedJSONError(f"the number {text[:30]} is out of range")
    return value


def _check_strings(value: Any) -> None:
    """Lone surrogates ("\\ud800" escapes) decode, yet nothing can encode them again; refuse them up front."""
    if isinstance(value, str):
        if _SURROGATE_RE.search(value):
            raise UntrustedJSONError("a string holds an unpaired surrogate escape (not valid Unicode)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key)
            _check_strings(item)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)


def json_loads(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, strict_unicode: bool = False) -> Any:
    """`json.loads` for untrusted documents. Raises UntrustedJSONError (a ValueError) for anything refused.

    Bundles leave `strict_unicode` off: one kernel with a "\ud800" escape is skipped, not the whole bundle; what is
    kept from them goes through `storable_text`/`storable_json`. Request bodies turn it on."""
    if isinstance(text, bytes | bytearray):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise UntrustedJSONError(f"not UTF-8 (invalid byte at offset {exc.start})") from exc
    if _depth_exceeds(text, max_depth):
        raise UntrustedJSONError(f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except UntrustedJSONError:
        raise
    except RecursionError as exc:  # the depth scan should have caught it; never let it become a 500
        raise UntrustedJSONError(f"nested deeper than {max_depth} levels") from exc
    except json.JSONDecodeError as exc:
        raise UntrustedJSONError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise UntrustedJSONError(str(exc)) from exc
    if strict_unicode:
        _check_strings(value)
    return value


def storable_text(text: str) -> str:
    """Text safe to keep in any database column: NUL and unpaired surrogates become U+FFFD."""
    return _SURROGATE_RE.sub("\ufffd", text.replace("\x00", "\ufffd"))


def storable_json(value: Any) -> Any:
    """A parsed document with every string (keys too) made `storable_text`; numbers and structure unchanged."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def strict_int(value: Any, *, max_digits: int = 9) -> int | None:
    """A non-negative integer from an int or a string of ASCII digits only, else None.

    Bools, floats, signs, exponents, Unicode digits ("²", "٣") and over-long numbers are all None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 10**max_digits else None
    if isinstance(value, str) and len(value) <= max_digits and _DIGITS_RE.fullmatch(value):
        return int(value)
    return None


def label(value: Any) -> str | None:
    """A lowercase token (hardware label, problem set): `[a-z0-9][a-z0-9_.-]*`, at most 100 characters, else None."""
    if isinstance(value, str) and _LABEL_RE.fullmatch(value):
        return value
    return None


def short_text(value: Any, *, max_length: int = 100) -> str | None:
    """A non-empty printable one-line string of at most `max_length` characters, else None (no CR/LF, no NUL)."""
    if isinstance(value, str) and 0 < len(value) <= max_length and value.isprintable():
        return value
    return None


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell safe to open in a spreadsheet: empty for None; text a spreadsheet would run as a formula
    (=, +, -, @, tab, carriage return first) gets a leading quote."""
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
