"""What a GPU is (its UUID and total memory), kept in the lock folder by the first evaluation that made a CUDA context
on it, so that the others are admitted to its memory before any of their workers touches it (gpu_holds.memory).
The lock folder is the orchestrators' alone (no kernel reaches it), and still the file is opened by descriptor and
never through a link, like the lock files beside it (gpu_lock.open_lock_file). stdlib only, like the orchestrator."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
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
    facts = read_json(file)
    ok = isinstance(facts, dict) and isinstance(facts.get("uuid"), str)
    ok = ok and isinstance(facts.get("total_memory_bytes"), int) and facts["total_memory_bytes"] > 0
    return {k: facts[k] for k in FACTS} if ok else {}


def read_json(file: Path | None) -> Any:
    """A small JSON file of the lock folder, opened by descriptor and never through a link; None when there is
    none or it does not parse."""
    if file is None:
        return None
    try:
        with os.fdopen(os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)) as handle:
            return json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None


def write(file: Path | None, facts: Mapping[str, Any]) -> None:
    """The device's facts, for the evaluations after this one (write_json)."""
    if facts.get("uuid"):
        write_json(file, {k: facts.get(k) for k in FACTS})


def write_json(file: Path | None, data: Any) -> None:
    """Written whole or not at all (a new temporary file renamed over it, readable by the orchestrators of every
    uid); a failure only costs the next evaluation what the file would have told it."""
    if file is None:
        return
    tmp = file.with_name(f".{file.name}.{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w") as handle:
            os.fchmod(fd, 0o644)  # whatever the umask
            handle.write(json.dumps(data))
        os.replace(tmp, file)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
