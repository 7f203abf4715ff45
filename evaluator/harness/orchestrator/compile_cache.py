"""The kernel build cache: one entry per sha256(source) + torch + CUDA + GPU arch, so re-evaluating a kernel skips
its ~47 s load_inline build. stdlib only.

The cache is the harness's own and the kernel never sees it (namespaces sandbox only; other modes evaluate without
it). The kernel builds into a folder of its own, which it sees at one fixed path (namespaces.BUILD_DIR), so a build
copied back from the cache is up to date for ninja. After a successful import the orchestrator copies the build's
products out of that folder (beneath.copy_out: from descriptors, never following a link, never reading a FIFO or
device): only names a C++/CUDA extension build makes (KEEP_NAMES, KEEP_SUFFIXES), at most `max_entry_bytes` per
entry. A manifest of the copied files' hashes is checked on every hit. The whole cache is capped at
`max_total_bytes`: the least recently used entries go first (`evict`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import IO

from evaluator.harness.sandbox.beneath import copy_out

# What torch.utils.cpp_extension (load_inline, load) leaves in a build folder: sources it wrote, ninja's files,
# objects, the shared library. Anything else a kernel writes there (data, caches of its own) is not kept.
KEEP_NAMES = frozenset({"build.ninja", ".ninja_log", ".ninja_deps"})
KEEP_SUFFIXES = frozenset(
    {".so", ".o", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp", ".ptx", ".cubin", ".fatbin"}
)


def keep_in_cache(relative: str) -> bool:
    """Whether a file of a kernel's build folder is a build product the cache keeps (Triton's cache is not: it is
    filled at the first call, after the copy)."""
    name = relative.rsplit("/", 1)[-1]
    if relative.split("/", 1)[0] == "triton":
        return False
    return name in KEEP_NAMES or os.path.splitext(name)[1] in KEEP_SUFFIXES


def cache_key(*, source: str, torch_version: str, cuda_version: str | None, arch: str) -> str:
    digest = hashlib.sha256()
    for part in (source, torch_version, cuda_version or "cpu", arch):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _manifest(build_dir: Path) -> dict[str, str]:
    """Hashes of the plain files of an entry (ours: links are not followed, and the copy made none)."""
    files = {}
    for path in sorted(build_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            files[str(path.relative_to(build_dir))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


class CacheEntry:
    """One cache entry; hold its lock from the check to the store."""

    def __init__(self, root: Path, key: str) -> None:
        self.root = root
        self.key = key
        self.build_dir = root / key / "build"
        self.manifest_path = root / f"{key}.json"
        self._lock_fh: IO[str] | None = None

    def acquire(self, timeout: float) -> bool:
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_fh = open(self.root / f"{self.key}.lock", "w")  # noqa: SIM115 - held until release()
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)

    def release(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    def check_hit(self) -> bool:
        """True when a verified build is there (and marks it used); otherwise the entry is emptied."""
        try:
            saved = json.loads(self.manifest_path.read_text())
            if saved.get("files") and saved["files"] == _manifest(self.build_dir):
                os.utime(self.manifest_path)  # recently used: eviction takes it last
                return True
        except (OSError, ValueError):
            pass
        self.discard()
        return False

    def store(self, kernel_build_fd: int, compile_s: float, *, max_entry_bytes: int) -> str:
        """Copy a fresh build's products out of the kernel's build folder (a descriptor) into this entry and write
        its manifest. Returns what happened, for the record: "stored", "nothing built" or why it was not kept."""
        self.discard()
        staging = self.root / self.key / f"staging-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.parent.mkdir(parents=True, exist_ok=True)
        try:
            copied = copy_out(kernel_build_fd, staging, keep=keep_in_cache, max_bytes=max_entry_bytes)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            return f"not kept: {exc}"
        if not copied:
            shutil.rmtree(staging, ignore_errors=True)
            return "nothing built"
        staging.replace(self.build_dir)
        files = _manifest(self.build_dir)
        size = sum(p.stat().st_size for p in self.build_dir.rglob("*") if p.is_file())
        tmp = self.manifest_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"files": files, "compile_s": compile_s, "bytes": size}))
        tmp.replace(self.manifest_path)
        return "stored"

    def discard(self) -> None:
        self.manifest_path.unlink(missing_ok=True)
        shutil.rmtree(self.build_dir, ignore_errors=True)


def entry_bytes(manifest: Path) -> int:
    try:
        return int(json.loads(manifest.read_text()).get("bytes", 0))
    except (OSError, ValueError, AttributeError):
        return 0


def evict(root: Path, max_total_bytes: int, *, keep: str = "") -> list[str]:
    """Remove least recently used entries (manifest mtime: stored or last hit) until the cache holds at most
    `max_total_bytes`; an entry whose lock another evaluation holds is skipped, and so is `keep`. Returns the keys
    removed."""
    if not root.is_dir():
        return []
    entries = []
    for manifest in root.glob("*.json"):
        with contextlib.suppress(OSError):
            entries.append((manifest.stat().st_mtime, manifest.stem, entry_bytes(manifest)))
    total = sum(size for _, _, size in entries)
    removed: list[str] = []
    for _, key, size in sorted(entries):
        if total <= max_total_bytes:
            break
        if key == keep:
            continue
        entry = CacheEntry(root, key)
        if not entry.acquire(0):
            continue
        try:
            entry.discard()
            shutil.rmtree(root / key, ignore_errors=True)
        finally:
            entry.release()
        total -= size
        removed.append(key)
    return removed
