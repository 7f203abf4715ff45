"""What a GPU is (its UUID and total memory), kept in the lock folder by the first evaluation that made a CUDA context
on it, so that the others are admitted to its memory before any of their workers touches it (gpu_holds.memory).
The lock folder is the orchestrators' alone: no kernel reaches it. stdlib only, like the orchestrator."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FACTS = ("uuid", "total_memory_bytes")


def path(lock_dir: str) -> Path | None:
    """The facts' file for the device the workers' cuda:0 is (per CUDA_VISIBLE_DEVICES); None with no lock folder."""
    visible = re.sub(r"[^A-Za-z0-9_.,-]", "_", os.environ.get("CUDA_VISIBLE_DEVICES", "all"))[:100]
    return Path(lock_dir) / f"device-{visible}.json" if lock_dir else None


def read(file: Path | None) -> dict[str, Any]:
    """The device's facts as an earlier evaluation wrote them; {} when there are none or they do not parse."""
    try:
        facts = json.loads(file.read_text()) if file else {}
    except (OSError, ValueError):
        return {}
    ok = isinstance(facts, dict) and isinstance(facts.get("uuid"), str)
    ok = ok and isinstance(facts.get("total_memory_bytes"), int) and facts["total_memory_bytes"] > 0
    return {k: facts[k] for k in FACTS} if ok else {}


def write(file: Path | None, facts: Mapping[str, Any]) -> None:
    """Written whole or not at all (a temporary file renamed over it); a failure only costs the next evaluation
    its contexts made before its admission."""
    if file is None or not facts.get("uuid"):
        return
    tmp = file.with_name(f".{file.name}.{os.getpid()}")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps({k: facts.get(k) for k in FACTS}))
        os.replace(tmp, file)
