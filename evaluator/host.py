"""Facts about the machine a worker runs on that the harness does not record: the NVIDIA driver's version, read
from /proc (no torch, no CUDA in Django processes), so a driver change alone is seen as a new software stack
(evaluator.selectors.stacks)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evaluator.harness.record import Record

DRIVER_FILE = Path("/proc/driver/nvidia/version")
_VERSION = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)")


def nvidia_driver_version(path: Path = DRIVER_FILE) -> str | None:
    """ "550.54.15" from the driver's /proc file, or None (no NVIDIA driver here, or an unknown format)."""
    try:
        match = _VERSION.search(path.read_text(errors="replace"))
    except OSError:
        return None
    return match.group(1) if match else None


def with_driver(record: dict[str, Any], *, device: str, path: Path = DRIVER_FILE) -> dict[str, Any]:
    """`record` with `environment.driver` filled in from this host for a CUDA evaluation (a copy; unchanged when the
    harness gave one already, on the CPU, or without a driver file)."""
    env = record.get("environment") if isinstance(record, dict) else None
    if device != "cuda" or not isinstance(env, dict) or env.get("driver"):
        return record
    version = nvidia_driver_version(path)
    if version is None:
        return record
    return {**record, "environment": {**env, "driver": version}}


def record_with_driver(record: Record, *, device: str, path: Path = DRIVER_FILE) -> Record:
    """`record` with `environment.driver` filled in from this host for a CUDA evaluation (set in place; unchanged
    when the harness gave one already, on the CPU, or without a driver file)."""
    if device != "cuda" or record.environment.driver:
        return record
    version = nvidia_driver_version(path)
    if version is not None:  # assigned, even as null, a field is written back (record_fields._Part.__setattr__)
        record.environment.driver = version
    return record
