"""Which of a call's arguments are tensors, and whether an output shares storage with one of them (B4: an output
that is an input, a view of one or an alias). torch only; never imports candidate code.

The functions it relies on are bound when this module is imported: the candidate worker imports it before any kernel
code exists, so a kernel that later replaces them changes nothing here (tamper_watch.py reports the replacement).
"""

from __future__ import annotations

import builtins
from typing import Any

import torch

_type = builtins.type
_Tensor = torch.Tensor
_storage = torch.Tensor.untyped_storage


def tensors(values: Any) -> list[torch.Tensor]:
    """The plain tensors among a call's arguments, in order."""
    return [v for v in values if _type(v) is _Tensor]


def overlaps(out: torch.Tensor, inputs: list[Any]) -> bool:
    """True when the output's storage overlaps any input's storage (returning an input, a view or an alias)."""
    o = _storage(out)
    o_start, o_end = o.data_ptr(), o.data_ptr() + o.nbytes()
    for tensor in tensors(inputs):
        s = _storage(tensor)
        start, end = s.data_ptr(), s.data_ptr() + s.nbytes()
        if tensor.device == out.device and start < o_end and o_start < end:
            return True
    return False
