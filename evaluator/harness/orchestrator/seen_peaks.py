"""The most a problem's reference worker has been seen to hold of a device: its allocator's reserved peak (cached
blocks and library workspaces included), kept in the lock folder beside the device's facts, so the next evaluation
of the same problem on the device declares at least that for each worker (declared_memory.reservation_bytes).

The meta-device estimate counts tensors, not what cuDNN's workspaces, the FP32, TF32 and compiled baselines and the
caching allocator's blocks make of them: on an H100 (2026-12-07), 10 of 23 reference workers held more than the
declaration for a worker, up to 1.9x (benchmarks/results/declared-vs-reserved-h100-2026-12-07.md), and an
evaluation beside them could run out of memory. An evaluation crowded out that way is evaluated again, and the
second time declares what was seen. Written from the reference worker's reading only, never the kernel's; one file
per device and problem, opened by descriptor and never through a link (device_facts). stdlib only.
"""

from __future__ import annotations

import re
from pathlib import Path

from evaluator.harness.orchestrator import device_facts


def path(lock_dir: str, problem_sha256: str | None) -> Path | None:
    """The file for this problem on the device the workers' cuda:0 is; None without a lock folder or a problem."""
    facts = device_facts.path(lock_dir)
    if facts is None or not problem_sha256 or not re.fullmatch(r"[0-9a-f]{64}", problem_sha256):
        return None
    return facts.with_name(f"{facts.stem}-peak-{problem_sha256[:32]}.json")


def read(file: Path | None) -> int:
    """The reserved peak seen for the problem on the device; 0 when none was."""
    data = device_facts.read_json(file)
    peak = data.get("reference_reserved_peak_bytes") if isinstance(data, dict) else None
    return peak if isinstance(peak, int) and not isinstance(peak, bool) and peak > 0 else 0


def remember(file: Path | None, peak: int) -> None:
    """Keep the larger of what was seen before and `peak` (two evaluations of one problem racing may keep the
    smaller once: the next one to see more writes it again)."""
    if file is not None and peak > read(file):
        device_facts.write_json(file, {"reference_reserved_peak_bytes": int(peak)})
