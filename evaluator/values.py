"""Reading numbers out of result records and sweep files, which come from processes we do not trust to be tidy:
the project's one finiteness rule (the harness keeps its own copy: it imports nothing of the project). Django-free."""

from __future__ import annotations

import math
from typing import Any


def finite_number(value: Any, *, positive: bool = False) -> float | None:
    """A finite int/float as float (bools and NaN/Inf are not numbers here); None otherwise or when not positive."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if positive and value <= 0:
        return None
    return float(value)


def finite_json(value: Any) -> Any:
    """Replace NaN/Inf anywhere in a JSON-like value with None (PostgreSQL jsonb rejects them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value
