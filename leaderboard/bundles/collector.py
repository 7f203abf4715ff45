"""Accumulates entries and the per-file report while a format reader walks a bundle.

Every format funnels its kernels through `Collector.offer`, so validation of one kernel (type of the ids, UTF-8,
size, NUL bytes, duplicates) is written once.
"""

from __future__ import annotations

import re
from typing import Any

from leaderboard.bundles.limits import Limits
from leaderboard.bundles.types import ACCEPTED, SKIPPED, BundleEntry, BundleError, FileReport, ParsedBundle
from leaderboard.untrusted import strict_int

# KernelBench run-folder file names and leaderboard-JSON keys: level_<L>_problem_<P>_sample_<S>[_kernel][.py]
KERNEL_NAME_RE = re.compile(r"^level_(\d{1,4})_problem_(\d{1,6})_sample_(\d{1,6})(?:_kernel)?(?:\.py)?$")


class Collector:
    """Collects accepted kernels and skipped files into a ParsedBundle."""

    def __init__(self, *, fmt: str, sha256: str, limits: Limits) -> None:
        self.bundle = ParsedBundle(format=fmt, sha256=sha256)
        self.limits = limits
        self._seen: dict[tuple[int, int, int], str] = {}

    def skip(self, name: str, reason: str, **ids: Any) -> None:
        ids = {k: v for k, v in ids.items() if isinstance(v, int) and not isinstance(v, bool)}
        self.bundle.report.append(FileReport(name=name, status=SKIPPED, reason=reason, **ids))

    def offer(self, *, name: str, level: Any, problem_id: Any, sample: Any, source: Any) -> None:
        """Validate one kernel and accept it, or record why it was skipped."""
        ids = {"level": as_int(level), "problem_id": as_int(problem_id), "sample": as_int(sample)}
        missing = [k for k, v in ids.items() if v is None]
        if missing:
            self.skip(name, f"{', '.join(missing)} missing or not a non-negative integer", **ids)
            return
        ids_ok = {k: v for k, v in ids.items() if v is not None}  # all of them (none missing)
        if ids_ok["level"] < 1 or ids_ok["problem_id"] < 1:
            self.skip(name, "level and problem_id start at 1", **ids)
            return
        if isinstance(source, bytes):
            source, problem = decode_source(source, self.limits)
            if problem:
                self.skip(name, problem, **ids)
                return
        if not isinstance(source, str):
            self.skip(name, "kernel source is not a string", **ids)
            return
        if problem := check_source(source, self.limits):
            self.skip(name, problem, **ids)
            return
        key = (ids_ok["level"], ids_ok["problem_id"], ids_ok["sample"])
        if key in self._seen:
            self.skip(name, f"duplicate of {self._seen[key]} (same level, problem and sample)", **ids)
            return
        self._seen[key] = name
        self.bundle.report.append(FileReport(name=name, status=ACCEPTED, **ids_ok))  # type: ignore[arg-type]
        self.bundle.entries.append(
            BundleEntry(source=source, origin=name, report_index=len(self.bundle.report) - 1, **ids_ok)
        )

    def count_file(self, count: int) -> None:
        """Reject the whole bundle once it holds more files than allowed (checked while walking, not after)."""
        if count > self.limits.max_files:
            raise BundleError(
                f"The bundle holds more than {self.limits.max_files} files (BUNDLE_MAX_FILES).",
                self.bundle.report_dicts(),
            )


def as_int(value: Any) -> int | None:
    """Accept ints and ASCII digit strings (JSON producers differ); reject bools, floats, negatives, "²"."""
    return strict_int(value.strip() if isinstance(value, str) else value, max_digits=6)


def _kernel_size_error(size: int, limits: Limits) -> str:
    """The one kernel-size rule (KERNEL_MAX_BYTES), for raw files and for sources decoded from JSON alike."""
    return (
        f"kernel larger than {limits.kernel_max_bytes} bytes (KERNEL_MAX_BYTES)"
        if size > limits.kernel_max_bytes
        else ""
    )


def decode_source(data: bytes, limits: Limits) -> tuple[str, str]:
    """Decode a kernel file; returns (source, "") or ("", reason)."""
    if reason := _kernel_size_error(len(data), limits):
        return "", reason
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        return "", f"not UTF-8 (byte {exc.start})"


def check_source(source: str, limits: Limits) -> str:
    """Reason a decoded kernel source is unusable, or "" when it is fine."""
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates from JSON "\ud800" escapes
        return "kernel source is not valid Unicode"
    if reason := _kernel_size_error(size, limits):
        return reason
    if not source.strip():
        return "empty kernel source"
    if "\x00" in source:  # PostgreSQL text cannot hold NUL, and no Python source needs it
        return "kernel source contains NUL characters"
    return ""
