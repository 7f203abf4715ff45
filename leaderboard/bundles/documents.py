"""Text bundle formats: community leaderboard JSON, JSONL (KernelBench or CUDA-L1 fields), and a single kernel file."""

from __future__ import annotations

import posixpath
from typing import Any

from leaderboard.bundles.collector import KERNEL_NAME_RE, Collector, as_int
from leaderboard.bundles.types import BundleError
from leaderboard.untrusted import json_loads, storable_text


def decode_text(data: bytes, what: str) -> str:
    """The whole document must be UTF-8; anything else is rejected with the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BundleError(f"The {what} is not UTF-8 (invalid byte at offset {exc.start}).") from exc


def read_leaderboard_json(data: bytes, collector: Collector) -> None:
    """`{"metadata": {...}, "kernels": {"level_L_problem_P_sample_S": "<source>"}}` (KernelBench-Leaderboard)."""
    try:
        document = json_loads(decode_text(data, "JSON bundle"))
    except ValueError as exc:  # malformed, NaN/Infinity, nested too deep
        raise BundleError(f"The JSON bundle does not parse ({exc}).") from exc
    if not isinstance(document, dict) or not isinstance(document.get("kernels"), dict):
        raise BundleError('The JSON bundle needs a "kernels" object keyed by level_<L>_problem_<P>_sample_<S>.')
    metadata = document.get("metadata")
    if isinstance(metadata, dict):
        # Keep only short scalar fields: the metadata is shown on the submission page.
        collector.bundle.metadata = {
            storable_text(str(k)[:100]): v if not isinstance(v, str) else storable_text(v[:1000])
            for k, v in metadata.items()
            if isinstance(v, str | int | float | bool) or v is None
        }
    kernels: dict[str, Any] = document["kernels"]
    collector.count_file(len(kernels))
    for key, source in kernels.items():
        match = KERNEL_NAME_RE.match(key)
        if not match:
            collector.skip(key, "key is not level_<L>_problem_<P>_sample_<S>")
            continue
        level, problem_id, sample = (int(g) for g in match.groups())
        collector.offer(name=key, level=level, problem_id=problem_id, sample=sample, source=source)


def read_jsonl(data: bytes, collector: Collector) -> None:
    """One object per line: `{level, problem_id, sample, source}` or CUDA-L1's `{level_id, task_id, custom_code}`."""
    lines = decode_text(data, "JSONL bundle").splitlines()
    collector.count_file(sum(1 for line in lines if line.strip()))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        name = f"line {number}"
        try:
            row = json_loads(line)
        except ValueError as exc:
            collector.skip(name, f"not valid JSON ({exc})")
            continue
        if not isinstance(row, dict):
            collector.skip(name, "not a JSON object")
            continue
        level = row.get("level", row.get("level_id"))
        problem_id = row.get("problem_id", row.get("task_id"))
        source = row.get("source", row.get("custom_code", row.get("code")))
        collector.offer(name=name, level=level, problem_id=problem_id, sample=row.get("sample", 0), source=source)


def read_single(data: bytes, collector: Collector, *, filename: str, level: Any, problem_id: Any, sample: Any) -> None:
    """One kernel `.py`; level and problem come from the form fields, or else from a KernelBench file name."""
    match = KERNEL_NAME_RE.match(posixpath.basename(filename))
    if match and level is None and problem_id is None:
        level, problem_id, sample = (int(g) for g in match.groups())
    if as_int(level) is None or as_int(problem_id) is None:
        raise BundleError("A single kernel file needs the level and problem_id fields.")
    collector.count_file(1)
    collector.offer(name=filename, level=level, problem_id=problem_id, sample=sample, source=data)
