"""The kernel build cache: one entry per sha256(source) + torch + CUDA + GPU arch, so re-evaluating a kernel skips
its ~47 s load_inline build. stdlib only.

The cache is the harness's own and the kernel never sees it (namespaces sandbox only; other modes evaluate without
it). The orchestrator reaches it only through a descriptor of its folder, handed over at start (the launcher's when
the evaluator is root: the orchestrator then runs unprivileged and the folder is shared by the orchestrators' group),
and every operation below is relative to that descriptor. The kernel builds into a folder of its own, which it sees
at one fixed path (namespaces.BUILD_DIR), so a build copied back from the cache is up to date for ninja. After a
successful import the orchestrator copies the build's products out of that folder (beneath.copy_out: from
descriptors, never following a link, never reading a FIFO or device, no folder made but for a file kept): only
names a C++/CUDA extension build makes (KEEP_NAMES, KEEP_SUFFIXES), at most `max_entry_bytes` and
`max_entry_files` files and folders per entry. A manifest of the copied files' hashes and folders is checked on
every hit. The whole cache is capped at `max_total_bytes` and `max_total_files` (files and folders: the inodes the
cache takes): the least recently used entries go first (`evict`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import time
from typing import Any

from evaluator.harness.sandbox.beneath import (
    CREATE_FLAGS,
    Refused,
    open_dir,
    open_dir_path,
    open_regular,
    read_bytes,
    remove_tree,
)
from evaluator.harness.sandbox.trees import copy_in, copy_out, walk

# What torch.utils.cpp_extension (load_inline, load) leaves in a build folder: sources it wrote, ninja's files,
# objects, the shared library. Anything else a kernel writes there (data, caches of its own) is not kept.
KEEP_NAMES = frozenset({"build.ninja", ".ninja_log", ".ninja_deps"})
KEEP_SUFFIXES = frozenset(
    {".so", ".o", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp", ".ptx", ".cubin", ".fatbin"}
)
DIR_MODE = 0o2770  # the orchestrators' group may read and replace entries (set-group-ID: new files keep the group)
FILE_MODE = 0o660
MANIFEST_MAX_BYTES = 4 << 20


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


def _manifest(build_fd: int) -> dict[str, Any]:
    """What an entry holds (ours, written by copy_out): each file's hash, each folder, bytes and inodes."""
    files: dict[str, str] = {}
    folders: list[str] = []
    size = 0
    for entry in walk(build_fd):
        size += entry.info.st_blocks * 512
        if entry.is_dir:
            folders.append(entry.rel)
        elif stat.S_ISREG(entry.info.st_mode):
            digest = hashlib.sha256()
            fd = open_regular(entry.dir_fd, entry.name)
            with os.fdopen(fd, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            files[entry.rel] = digest.hexdigest()
        else:
            folders.append(f"{entry.rel} (not a file)")  # never made by copy_out: the entry no longer matches
    return {"files": files, "folders": folders, "bytes": size, "inodes": len(files) + len(folders) + 1}


def _write_file(root: int, name: str, data: bytes) -> None:
    """Write `name` in the cache folder anew (a temporary name, then renamed over)."""
    tmp = f"{name}.tmp{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=root)
    fd = os.open(tmp, CREATE_FLAGS, FILE_MODE, dir_fd=root)
    try:
        os.fchmod(fd, FILE_MODE)
        os.write(fd, data)
    finally:
        os.close(fd)
    os.rename(tmp, name, src_dir_fd=root, dst_dir_fd=root)


class CacheEntry:
    """One cache entry under the cache folder's descriptor `root`; hold its lock from the check to the store."""

    def __init__(self, root: int, key: str) -> None:
        self.root = root
        self.key = key
        self.manifest_name = f"{key}.json"
        self._lock_fd: int | None = None

    def acquire(self, timeout: float) -> bool:
        name, flags = f"{self.key}.lock", os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self._lock_fd = os.open(name, os.O_RDWR | os.O_CREAT | flags, FILE_MODE, dir_fd=self.root)
        except PermissionError:  # another user's lock file (an older harness's): a lock all the same
            self._lock_fd = os.open(name, os.O_RDONLY | flags, dir_fd=self.root)
        with contextlib.suppress(OSError):  # another orchestrator's file: its mode is already the group's
            os.fchmod(self._lock_fd, FILE_MODE)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing drops the flock
            self._lock_fd = None

    def _saved(self) -> dict[str, Any]:
        saved = json.loads(read_bytes(self.root, self.manifest_name, max_bytes=MANIFEST_MAX_BYTES))
        return saved if isinstance(saved, dict) else {}

    def check_hit(self) -> bool:
        """True when a verified build is there (and marks it used); otherwise the entry is emptied."""
        try:
            saved = self._saved()
            with open_dir_path(self.root, f"{self.key}/build") as build:
                found = _manifest(build)
            if saved.get("files") and all(saved.get(k) == found[k] for k in ("files", "folders")):
                os.utime(self.manifest_name, dir_fd=self.root)  # recently used: eviction takes it last
                return True
        except (OSError, ValueError):
            pass
        self.discard()
        return False

    def store(
        self, kernel_build_fd: int, compile_s: float, *, max_entry_bytes: int, max_entry_files: int = 4096
    ) -> str:
        """Copy a fresh build's products out of the kernel's build folder (a descriptor) into this entry and write
        its manifest. Returns what happened, for the record: "stored", "nothing built" or why it was not kept."""
        try:
            return self._store(kernel_build_fd, compile_s, max_entry_bytes, max_entry_files)
        except OSError as exc:  # an entry this orchestrator may not replace (an older harness's), a full disk
            return f"not kept: {exc}"

    def _store(self, kernel_build_fd: int, compile_s: float, max_entry_bytes: int, max_entry_files: int) -> str:
        self.discard()
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.key, DIR_MODE, dir_fd=self.root)
        with open_dir(self.root, self.key) as entry_fd:
            os.fchmod(entry_fd, DIR_MODE)
            staging = f"staging-{os.getpid()}"
            remove_tree(entry_fd, staging)
            os.mkdir(staging, DIR_MODE, dir_fd=entry_fd)
            try:
                with open_dir(entry_fd, staging) as dst:
                    os.fchmod(dst, DIR_MODE)
                    copied = copy_out(kernel_build_fd, dst, keep=keep_in_cache, max_bytes=max_entry_bytes,
                                      max_entries=max_entry_files)  # fmt: skip
                    _share(dst)
            except OSError as exc:
                remove_tree(entry_fd, staging)
                return f"not kept: {exc}"
            if not copied:
                remove_tree(entry_fd, staging)
                return "nothing built"
            os.rename(staging, "build", src_dir_fd=entry_fd, dst_dir_fd=entry_fd)
            with open_dir(entry_fd, "build") as build:
                manifest = _manifest(build)
        _write_file(self.root, self.manifest_name, json.dumps({**manifest, "compile_s": compile_s}).encode())
        return "stored"

    def copy_into(self, build_fd: int) -> int:
        """Copy this (verified) entry into the kernel's fresh build folder; folders and files group-writable, so a
        build folder the kernel shares with us through its group stays its to rebuild. Returns the bytes copied."""
        with open_dir_path(self.root, f"{self.key}/build") as build:
            return copy_in(build, build_fd, dir_mode=0o2775, file_mode=0o664)

    def discard(self) -> None:
        with contextlib.suppress(OSError):  # gone, or not ours to remove: it stays a miss (its manifest no match)
            os.unlink(self.manifest_name, dir_fd=self.root)
        with contextlib.suppress(OSError):
            remove_tree(self.root, self.key)


def _share(top: int) -> None:
    """Give what copy_out made the cache's modes (it makes them private to its user)."""
    for entry in walk(top):
        with contextlib.suppress(OSError):
            os.chmod(entry.name, DIR_MODE if entry.is_dir else FILE_MODE, dir_fd=entry.dir_fd, follow_symlinks=False)


def entry_size(root: int, manifest: str) -> tuple[int, int]:
    """(bytes, inodes) an entry's manifest records (an entry counts at least one of each)."""
    try:
        saved = json.loads(read_bytes(root, manifest, max_bytes=MANIFEST_MAX_BYTES))
        return max(int(saved.get("bytes", 0)), 1), max(int(saved.get("inodes", 0)), 1)
    except (OSError, ValueError, AttributeError, TypeError):
        return 1, 1


def evict(root: int, max_total_bytes: int, *, keep: str = "", max_total_files: int = 1 << 62) -> list[str]:
    """Remove least recently used entries (manifest mtime: stored or last hit) until the cache folder (descriptor
    `root`) holds at most `max_total_bytes` and `max_total_files` files and folders; an entry whose lock another
    evaluation holds is skipped, and so is `keep`. Returns the keys removed."""
    entries = []
    for name in os.listdir(root):
        if name.endswith(".json") and not name.startswith("."):
            with contextlib.suppress(OSError):
                mtime = os.stat(name, dir_fd=root, follow_symlinks=False).st_mtime
                entries.append((mtime, name[: -len(".json")], *entry_size(root, name)))
    total = sum(size for _, _, size, _ in entries)
    inodes = sum(count for _, _, _, count in entries)
    removed: list[str] = []
    for _, key, size, count in sorted(entries):
        if total <= max_total_bytes and inodes <= max_total_files:
            break
        if key == keep:
            continue
        entry = CacheEntry(root, key)
        try:
            if not entry.acquire(0):
                continue
            entry.discard()
        except (OSError, Refused):
            continue
        finally:
            entry.release()
        total -= size
        inodes -= count
        removed.append(key)
    return removed


def open_cache(path: str) -> int:
    """A descriptor of the cache folder (made if missing): for an orchestrator that reaches the cache itself."""
    os.makedirs(path, exist_ok=True)
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
