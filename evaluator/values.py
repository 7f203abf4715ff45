"""Reading numbers out of result records and sweep files, which come from processes we do not trust to be tidy."""

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
