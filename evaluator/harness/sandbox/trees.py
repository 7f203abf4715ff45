"""Walking and copying trees the kernel wrote, for the orchestrator (the compile cache, the disk watch where no
sized filesystem holds the kernel's folders): from descriptors (beneath.py), never following a link, never reading a
FIFO or device. stdlib only; the launcher never imports it (it copies nothing the kernel wrote).

Walks never recurse: `walk` keeps its own stack (at most `max_depth` folders open at once) and stops with Refused
past `max_entries`, so a tree 2,000 levels deep or a million entries wide costs a bounded amount of work and never a
RecursionError.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from evaluator.harness.sandbox.beneath import CREATE_FLAGS, DIR_FLAGS, GONE, MAX_ENTRIES, Refused, open_regular

MAX_DEPTH = 32  # folders deeper than this are counted but never entered (no build product lives that deep)


def _copy_fd(src: int, dst: int, budget: int) -> int:
    copied = 0
    while True:
        chunk = os.read(src, 1 << 20)
        if not chunk:
            return copied
        copied += len(chunk)
        if copied > budget:
            raise Refused("over the size allowed")
        os.write(dst, chunk)


@dataclass(frozen=True)
class Entry:
    """One entry met by `walk`: its path relative to the top, the descriptor of the folder holding it (valid until the
    walk moves on), its name there, its lstat, and whether it is a folder too deep to be entered."""

    rel: str
    dir_fd: int
    name: str
    info: os.stat_result
    deep: bool = False

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.info.st_mode)


def walk(top_fd: int, *, max_depth: int = MAX_DEPTH, max_entries: int = MAX_ENTRIES) -> Iterator[Entry]:
    """Every entry under the folder `top_fd`, a folder before what it holds, names in sorted order: no recursion, no
    link followed (a folder swapped for one is skipped), at most `max_depth` folders open at once (deeper ones are
    yielded with `deep` set, never entered), Refused past `max_entries`."""
    seen = 0
    stack: list[tuple[int, Iterator[str], str]] = [(top_fd, iter(sorted(os.listdir(top_fd))), "")]
    try:
        while stack:
            fd, names, prefix = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                if fd != top_fd:
                    os.close(fd)
                continue
            seen += 1
            if seen > max_entries:
                raise Refused(f"more than {max_entries} entries")
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            deep = stat.S_ISDIR(info.st_mode) and len(stack) > max_depth
            yield Entry(f"{prefix}{name}", fd, name, info, deep)
            if stat.S_ISDIR(info.st_mode) and not deep:
                try:
                    sub = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in GONE:
                        continue
                    raise
                try:
                    listing = iter(sorted(os.listdir(sub)))
                except BaseException:
                    os.close(sub)
                    raise
                stack.append((sub, listing, f"{prefix}{name}/"))
    finally:
        for fd, _, _ in stack:
            if fd != top_fd:
                os.close(fd)


@dataclass(frozen=True)
class Usage:
    """What a tree holds: bytes allocated (files and folders), entries (inodes), and whether it went deeper than the
    walk would enter (then `bytes` misses what lies below)."""

    bytes: int
    entries: int
    too_deep: bool


def tree_usage(top_fd: int, *, max_depth: int = MAX_DEPTH, max_entries: int = MAX_ENTRIES) -> Usage:
    """Bytes and entries under `top_fd` (the disk watchdog where no size-capped filesystem holds the kernel's
    folders); a tree over `max_entries` counts as that many plus one."""
    total = entries = 0
    deep = False
    try:
        for entry in walk(top_fd, max_depth=max_depth, max_entries=max_entries):
            total += entry.info.st_blocks * 512
            entries += 1
            deep = deep or entry.deep
    except Refused:
        entries = max_entries + 1
    return Usage(total, entries, deep)


def copy_out(
    src_fd: int,
    dst_fd: int,
    *,
    keep: Callable[[str], bool],
    max_bytes: int,
    max_entries: int = 4096,
    max_depth: int = MAX_DEPTH,
) -> list[str]:
    """Copy the plain files under the kernel's folder `src_fd` whose relative path passes `keep` into the empty folder
    `dst_fd` (ours). Links, FIFOs, sockets and devices are skipped, never followed or read; a folder is made only for a
    file kept inside it (a tree of empty folders copies nothing). Files and folders made count against `max_entries`,
    their bytes against `max_bytes` (Refused past either; the caller removes what was made). Returns the relative
    paths of the files copied."""
    copied: list[str] = []
    made: set[str] = set()
    budget = max_bytes
    for entry in walk(src_fd, max_depth=max_depth, max_entries=max(max_entries * 64, 100_000)):
        if not stat.S_ISREG(entry.info.st_mode) or not keep(entry.rel):
            continue
        parts = entry.rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in made:
                os.mkdir(folder, 0o700, dir_fd=dst_fd)
                made.add(folder)
        if len(made) + len(copied) + 1 > max_entries:
            raise Refused(f"more than {max_entries} files and folders")
        try:
            src = open_regular(entry.dir_fd, entry.name)  # the budget is enforced while copying
        except (FileNotFoundError, Refused):
            continue
        except OSError as exc:
            if exc.errno in GONE:
                continue
            raise
        try:
            out = os.open(entry.rel, CREATE_FLAGS, 0o600, dir_fd=dst_fd)
            try:
                budget -= _copy_fd(src, out, budget)
                seen = os.fstat(src)  # ninja compares times: a build copied back must stay up to date
                os.utime(out, ns=(seen.st_atime_ns, seen.st_mtime_ns))
            finally:
                os.close(out)
        finally:
            os.close(src)
        copied.append(entry.rel)
    return copied


def copy_in(src_fd: int, dst_fd: int, *, dir_mode: int = 0o755, file_mode: int = 0o644) -> int:
    """Copy a tree of ours (a cache entry, `src_fd`) into a fresh folder the kernel will use (`dst_fd`): each folder
    and file created new through the destination's descriptor, with these modes whatever the umask (a build folder
    shared through its group needs group write). Folders are never chmod-ed after they are made: that would drop
    the set-group-ID bit they inherit (we are not in the kernel's group). Returns the bytes copied."""
    total = 0
    before = os.umask(0o777 & ~(dir_mode | file_mode))
    try:
        for entry in walk(src_fd):
            if entry.is_dir:
                os.mkdir(entry.rel, dir_mode, dir_fd=dst_fd)
            elif stat.S_ISREG(entry.info.st_mode):
                total += _copy_file(entry, dst_fd, file_mode)
    finally:
        os.umask(before)
    return total


def _copy_file(entry: Entry, dst_fd: int, file_mode: int) -> int:
    """Copy one file met by `walk` to the same relative path under `dst_fd`, keeping its times (ninja compares
    them) and its execute bits."""
    src = open_regular(entry.dir_fd, entry.name)
    try:
        out = os.open(entry.rel, CREATE_FLAGS, file_mode, dir_fd=dst_fd)
        try:
            os.fchmod(out, file_mode | (stat.S_IMODE(entry.info.st_mode) & 0o111))
            copied = _copy_fd(src, out, 1 << 40)
            os.utime(out, ns=(entry.info.st_atime_ns, entry.info.st_mtime_ns))
            return copied
        finally:
            os.close(out)
    finally:
        os.close(src)
