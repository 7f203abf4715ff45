"""`parse_bundle`: the one entry point the web form, the API and the CLI share."""

from __future__ import annotations

import hashlib
from typing import Any

from leaderboard.bundles.archives import read_tar, read_zip
from leaderboard.bundles.collector import Collector
from leaderboard.bundles.documents import read_jsonl, read_leaderboard_json, read_single
from leaderboard.bundles.limits import Limits, check_bundle_size
from leaderboard.bundles.types import BundleError, ParsedBundle

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
GZIP_MAGIC = b"\x1f\x8b"


def detect_format(filename: str, data: bytes) -> str:
    """Pick a reader from the file name, falling back to magic bytes and a JSON sniff."""
    name = filename.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if name.endswith(".tar"):
        return "tar"
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    if name.endswith(".py"):
        return "py"
    if data.startswith(ZIP_MAGIC):
        return "zip"
    if data.startswith(GZIP_MAGIC):
        return "tar.gz"
    if len(data) > 262 and data[257:262] == b"ustar":
        return "tar"
    head = data.lstrip()[:1]
    if head == b"{":
        # A leaderboard JSON is one object; JSONL is one object per line.
        return "json" if b'"kernels"' in data[:4096] else "jsonl"
    raise BundleError(
        "Unknown bundle format: upload a .zip/.tar.gz run folder, a leaderboard .json, a .jsonl or a kernel .py."
    )


def parse_bundle(
    *,
    filename: str,
    data: bytes,
    level: int | None = None,
    problem_id: int | None = None,
    sample: int = 0,
    limits: Limits | None = None,
) -> ParsedBundle:
    """Parse an uploaded bundle into kernel entries and a per-file report.

    Raises BundleError when the bundle is rejected whole (too large, unsafe archive, unreadable, no kernel at all).
    Problem lookup happens later, in `submission_create`, because it needs the database.
    """
    limits = limits or Limits.from_settings()
    check_bundle_size(len(data), limit=limits.max_bytes)
    if not data:
        raise BundleError("The bundle is empty.")
    fmt = detect_format(filename, data)
    collector = Collector(fmt=fmt, sha256=hashlib.sha256(data).hexdigest(), limits=limits)
    readers: dict[str, Any] = {
        "zip": lambda: read_zip(data, collector, limits),
        "tar.gz": lambda: read_tar(data, collector, limits, compressed=True),
        "tar": lambda: read_tar(data, collector, limits, compressed=False),
        "json": lambda: read_leaderboard_json(data, collector),
        "jsonl": lambda: read_jsonl(data, collector),
        "py": lambda: read_single(
            data, collector, filename=filename, level=level, problem_id=problem_id, sample=sample
        ),
    }
    readers[fmt]()
    bundle = collector.bundle
    if not bundle.entries:
        raise BundleError("The bundle holds no usable kernel.", bundle.report_dicts())
    return bundle


def read_upload(upload: Any, limit: int) -> bytes:
    """Read at most limit+1 bytes of an uploaded file, so an oversized one is refused without reading it all."""
    upload.seek(0)
    return upload.read(limit + 1)
