"""Zip and tar(.gz) readers for KernelBench run folders, hardened against hostile archives.

Rejected whole: absolute paths, `..` components, symlinks, hard links, device/FIFO members, more members than
BUNDLE_MAX_FILES, or more uncompressed bytes than the bundle may expand to (zip/gzip bombs). Sizes are enforced
while decompressing, never trusted from headers. Tar headers are read by `tar_headers.BoundedTarInfo` (a linear pax
parser and capped header sizes: CVE-2024-6232 on interpreters before 3.11.10/3.12.6), tar archives in stream mode
(never seeking back), and every archive's reading stops once it has used BUNDLE_PARSE_SECONDS of CPU time.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import re
import stat
import tarfile
import time
import zipfile
import zlib
from typing import IO, Any

from leaderboard.bundles.collector import KERNEL_NAME_RE, Collector
from leaderboard.bundles.limits import Limits
from leaderboard.bundles.tar_headers import BoundedTarInfo
from leaderboard.bundles.types import BundleError
from leaderboard.untrusted import json_loads, storable_json

EVAL_RESULTS_NAME = "eval_results.json"
NOT_A_KERNEL = "not a kernel file (expected level_<L>_problem_<P>_sample_<S>_kernel.py)"
_CHUNK = 64 * 1024


def check_member_name(name: str) -> None:
    """Reject names that could escape an extraction directory, even though we never extract to disk."""
    if not name or "\x00" in name:
        raise BundleError("The archive holds a member with an empty or NUL-containing name.")
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise BundleError(f"The archive holds an absolute path: {name!r}.")
    if ".." in re.split(r"[\\/]+", name):
        raise BundleError(f"The archive holds a path that leaves its folder: {name!r}.")


class _Budget:
    """Uncompressed bytes the whole archive may still yield, and the CPU seconds its reading may still take."""

    def __init__(self, limit: int, seconds: float = float("inf")) -> None:
        self.left = limit
        self.limit = limit
        self.seconds = seconds
        self.started = time.process_time()

    def check_time(self) -> None:
        """Refuse the archive once reading it has taken `seconds` of this process's CPU time (checked per member:
        each member's own cost is bounded by the size caps)."""
        if time.process_time() - self.started > self.seconds:
            raise BundleError(
                f"Reading the archive took more than {self.seconds:g} s of CPU (BUNDLE_PARSE_SECONDS); refusing it."
            )

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise BundleError(f"The archive expands to more than {self.limit} bytes; refusing it (possible zip bomb).")


def _read_capped(stream: IO[bytes], cap: int, budget: _Budget) -> bytes:
    """Read at most cap+1 bytes, so the caller can tell "too large" without decompressing the rest."""
    chunks, total = [], 0
    while total <= cap:
        chunk = stream.read(min(_CHUNK, cap + 1 - total))
        if not chunk:
            break
        budget.spend(len(chunk))
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _member(collector: Collector, name: str, data: bytes | None, limits: Limits, reason: str = "") -> None:
    """Route one regular archive member: a kernel file, the submitter's eval_results.json, or something else."""
    base = posixpath.basename(name.replace("\\", "/"))
    if reason:
        collector.skip(name, reason)
        return
    if base == EVAL_RESULTS_NAME:
        _claimed_results(collector, name, data or b"")
        return
    match = KERNEL_NAME_RE.match(base)
    if not match or not base.endswith("_kernel.py"):
        collector.skip(name, NOT_A_KERNEL)
        return
    level, problem_id, sample = (int(g) for g in match.groups())
    collector.offer(name=name, level=level, problem_id=problem_id, sample=sample, source=data or b"")


def wanted(name: str) -> bool:
    """Whether a member is worth decompressing at all (kernel files and eval_results.json)."""
    base = posixpath.basename(name.replace("\\", "/"))
    return base == EVAL_RESULTS_NAME or (bool(KERNEL_NAME_RE.match(base)) and base.endswith("_kernel.py"))


def _claimed_results(collector: Collector, name: str, data: bytes) -> None:
    """Keep eval_results.json only as the submitter's claim, normalised to {problem_id: [sample results]}.

    KernelBench wrote a list per problem (main) or a single dict per problem (v0.1); both are accepted.
    """
    try:
        raw = json_loads(data)
    except ValueError as exc:  # not UTF-8, malformed, NaN/Infinity, nested too deep
        collector.skip(name, f"eval_results.json is not usable JSON ({exc}); claim ignored")
        return
    if not isinstance(raw, dict):
        collector.skip(name, "eval_results.json is not an object keyed by problem id; claim ignored")
        return
    normalised: dict[str, Any] = {}
    for problem_id, value in raw.items():
        if isinstance(value, dict):
            normalised[str(problem_id)] = [value]
        elif isinstance(value, list):
            normalised[str(problem_id)] = [v for v in value if isinstance(v, dict)]
    claims = collector.bundle.claimed_results or {}
    claims[name] = storable_json(normalised)
    collector.bundle.claimed_results = claims
    collector.skip(name, f"submitter's claimed results for {len(normalised)} problems; stored, not trusted")


def read_zip(data: bytes, collector: Collector, limits: Limits) -> None:
    """Walk a zip archive's members."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise BundleError(f"Not a readable zip archive ({exc}).") from exc
    collector.count_file(len(infos))
    budget = _Budget(limits.max_uncompressed_bytes, limits.parse_seconds)
    for info in infos:
        budget.check_time()
        check_member_name(info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise BundleError(f"The archive holds a symbolic link: {info.filename!r}.")
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise BundleError(f"The archive holds a device or special file: {info.filename!r}.")
        if info.is_dir():
            continue
        if not wanted(info.filename):
            _member(collector, info.filename, None, limits, NOT_A_KERNEL)
            continue
        if info.flag_bits & 0x1:
            _member(collector, info.filename, None, limits, "encrypted member")
            continue
        cap = limits.kernel_max_bytes if info.filename.endswith(".py") else limits.max_bytes
        try:
            with archive.open(info) as stream:
                content = _read_capped(stream, cap, budget)
        except BundleError:  # the whole bundle's budget (a zip bomb): not one unreadable member
            raise
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            NotImplementedError,
            RuntimeError,
            OSError,
            ValueError,
        ) as exc:
            _member(collector, info.filename, None, limits, f"unreadable member ({exc})")
            continue
        if len(content) > cap:
            _member(collector, info.filename, None, limits, f"larger than {cap} bytes")
            continue
        _member(collector, info.filename, content, limits)


class _LimitedReader(io.RawIOBase):
    """A read-only stream that stops the whole parse once more than `budget` bytes were decompressed."""

    def __init__(self, inner: IO[bytes], budget: _Budget) -> None:
        self.inner = inner
        self.budget = budget

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        chunk = self.inner.read(size if size and size > 0 else _CHUNK)
        self.budget.spend(len(chunk))
        return chunk


def read_tar(data: bytes, collector: Collector, limits: Limits, *, compressed: bool) -> None:
    """Walk a tar or tar.gz archive in stream mode, so decompression is bounded by the budget as it happens."""
    budget = _Budget(limits.max_uncompressed_bytes, limits.parse_seconds)
    inner: IO[bytes] = gzip.GzipFile(fileobj=io.BytesIO(data)) if compressed else io.BytesIO(data)  # type: ignore[assignment]
    count = 0
    try:
        with tarfile.open(fileobj=_LimitedReader(inner, budget), mode="r|", tarinfo=BoundedTarInfo) as archive:
            for member in archive:
                budget.check_time()
                count += 1
                collector.count_file(count)
                check_member_name(member.name)
                if member.issym() or member.islnk():
                    raise BundleError(f"The archive holds a link: {member.name!r}.")
                if member.isdev() or member.isfifo():
                    raise BundleError(f"The archive holds a device or special file: {member.name!r}.")
                if member.isdir():
                    continue
                if not member.isfile():
                    _member(collector, member.name, None, limits, "not a regular file")
                    continue
                if not wanted(member.name):
                    _member(collector, member.name, None, limits, NOT_A_KERNEL)
                    continue
                cap = limits.kernel_max_bytes if member.name.endswith(".py") else limits.max_bytes
                if member.size > cap:
                    _member(collector, member.name, None, limits, f"larger than {cap} bytes")
                    continue
                stream = archive.extractfile(member)
                content = _read_capped(stream, cap, _Budget(cap + 1)) if stream else b""
                _member(collector, member.name, content, limits)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise BundleError(f"Not a readable tar archive ({exc}).", collector.bundle.report_dicts()) from exc
