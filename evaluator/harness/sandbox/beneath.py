"""File operations inside a folder the kernel can write, made so that nothing the kernel plants there can send them
elsewhere, and so that no tree it builds (deep, wide, racing) can exhaust the process doing them. stdlib only.

The rule (docs/protocol.md, "The boundary"): the harness never resolves a path inside a kernel-writable folder.
Everything here starts from a directory descriptor of a folder the kernel cannot replace (it sits in a folder of
ours), walks one component at a time with O_NOFOLLOW (a planted symbolic link fails with ELOOP instead of being
followed, like openat2's RESOLVE_NO_SYMLINKS), checks what it opened with fstat on the descriptor (a FIFO or a
device is never read), and reads or writes through that descriptor. A kernel racing us (swapping a file for a link
between two calls) can only make an operation fail, never redirect it.

Walks never recurse: `walk` keeps its own stack (at most `max_depth` folders open at once) and stops with Refused
past `max_entries`, so a tree 2,000 levels deep or a million entries wide costs a bounded amount of work and never a
RecursionError. `remove_tree` needs no stack at all: it moves each subfolder up into the folder it empties.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_DEPTH = 32  # folders deeper than this are counted but never entered (no build product lives that deep)
MAX_ENTRIES = 1_000_000  # a walk past this many entries is refused (the kernel's disk caps its inodes far below)
_GONE = (errno.ENOENT, errno.ELOOP, errno.ENOTDIR)  # the entry went away or was swapped for a link meanwhile


class Refused(OSError):
    """What the kernel left there is not a plain file or folder (a link, a FIFO, a device), or is too large."""


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise Refused(f"not a plain name: {name[:80]!r}")


@contextlib.contextmanager
def open_dir(parent_fd: int, name: str) -> Iterator[int]:
    """A descriptor of the folder `name` directly inside `parent_fd`, never through a link."""
    _check_name(name)
    fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def open_trusted_dir(path: Path | str) -> Iterator[int]:
    """A descriptor of a folder of ours (the evaluation's work folder, the cache): the start of every walk."""
    fd = os.open(str(path), DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def open_regular(dir_fd: int, name: str, *, max_bytes: int | None = None) -> int:
    """A read descriptor of the regular file `name` in `dir_fd` (never a link, FIFO or device), at most `max_bytes`
    long. The caller closes it."""
    _check_name(name)
    fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise Refused(f"{name} is {info.st_size} bytes, over the {max_bytes} allowed")
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_bytes(dir_fd: int, name: str, *, max_bytes: int) -> bytes:
    """The bytes of the regular file `name` in `dir_fd`, at most `max_bytes` (a longer file is refused)."""
    fd = open_regular(dir_fd, name, max_bytes=max_bytes)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(max_bytes + 1)[:max_bytes]


def read_path(root: Path, relative: str, *, max_bytes: int) -> bytes:
    """Read `root/relative` where `root` is ours and everything below it may be the kernel's."""
    parts = [p for p in relative.split("/") if p]
    if not parts:
        raise Refused("empty path")
    with contextlib.ExitStack() as stack:
        fd = stack.enter_context(open_trusted_dir(root))
        for part in parts[:-1]:
            fd = stack.enter_context(open_dir(fd, part))
        return read_bytes(fd, parts[-1], max_bytes=max_bytes)


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
                    if exc.errno in _GONE:
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
            if exc.errno in _GONE:
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


@contextlib.contextmanager
def open_dir_path(top_fd: int, relative: str) -> Iterator[int]:
    """A descriptor of the folder `relative` under `top_fd`, one component at a time, never through a link."""
    with contextlib.ExitStack() as stack:
        fd = top_fd
        for part in relative.split("/"):
            fd = stack.enter_context(open_dir(fd, part))
        yield fd


def remove_tree(parent_fd: int, name: str, *, max_entries: int = MAX_ENTRIES) -> None:
    """Remove `name` in `parent_fd`, whatever it is, never following a link and never recursing: each subfolder of a
    folder being emptied is moved up into the top folder, so no more than two folders are open at once and a tree
    2,000 levels deep takes 2,000 short steps. Refused past `max_entries` (what is left stays)."""
    _check_name(name)
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent_fd)
        return
    with open_dir(parent_fd, name) as top:
        _flatten_out(top, max_entries)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(name, dir_fd=parent_fd)


def empty_dir(fd: int, *, max_entries: int = MAX_ENTRIES) -> None:
    """Remove everything inside the folder `fd` (links removed as links; see remove_tree)."""
    _flatten_out(fd, max_entries)


def _flatten_out(top: int, max_entries: int) -> None:
    handled = moved = 0
    while names := os.listdir(top):
        for name in names:
            handled += 1
            if handled > max_entries:
                raise Refused(f"more than {max_entries} entries to remove")
            try:
                info = os.stat(name, dir_fd=top, follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode):
                    os.unlink(name, dir_fd=top)
                    continue
                with open_dir(top, name) as sub:
                    for child in os.listdir(sub):
                        if stat.S_ISDIR(os.stat(child, dir_fd=sub, follow_symlinks=False).st_mode):
                            moved = _free_number(top, moved + 1)
                            os.rename(child, f".kbv-rm-{moved}", src_dir_fd=sub, dst_dir_fd=top)
                        else:
                            os.unlink(child, dir_fd=sub)
                os.rmdir(name, dir_fd=top)
            except OSError as exc:
                if exc.errno not in (*_GONE, errno.ENOTEMPTY):
                    raise


def _free_number(top: int, start: int) -> int:
    """The first n from `start` whose name `.kbv-rm-n` is not taken in the folder `top` (rename would replace an empty
    folder of that name, never fail)."""
    for n in range(start, start + MAX_ENTRIES):
        try:
            os.stat(f".kbv-rm-{n}", dir_fd=top, follow_symlinks=False)
        except FileNotFoundError:
            return n
    raise Refused("no free name to move a folder to")


def fresh_dir(parent_fd: int, name: str, owner: tuple[int, int] | None, mode: int = 0o700) -> int:
    """Replace whatever is at `name` in `parent_fd` (a link, a file, a folder the kernel filled) by a new empty
    folder owned by `owner`, and return a descriptor of it (the caller closes it). The descriptor names the folder
    we made, whatever the kernel renames later."""
    remove_tree(parent_fd, name)
    os.mkdir(name, mode, dir_fd=parent_fd)
    fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    if owner is not None:
        os.fchown(fd, *owner)
    os.fchmod(fd, mode)
    return fd
