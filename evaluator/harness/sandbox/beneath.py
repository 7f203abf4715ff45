"""File operations inside a folder the kernel can write, made so that nothing the kernel plants there can send them
elsewhere, and so that no tree it builds (deep, wide, racing) can exhaust the process doing them: opening, reading
and removing here (the launcher's too), walking and copying in trees.py (the orchestrator's). stdlib only.

The rule (docs/protocol.md, "The boundary"): the harness never resolves a path inside a kernel-writable folder.
Everything here starts from a directory descriptor of a folder the kernel cannot replace (it sits in a folder of
ours), walks one component at a time with O_NOFOLLOW (a planted symbolic link fails with ELOOP instead of being
followed, like openat2's RESOLVE_NO_SYMLINKS), checks what it opened with fstat on the descriptor (a FIFO or a
device is never read), and reads or writes through that descriptor. A kernel racing us (swapping a file for a link
between two calls) can only make an operation fail, never redirect it.

Nothing recurses: `remove_tree` moves each subfolder up into the folder it empties, so a tree 2,000 levels deep
takes 2,000 short steps with two folders open, and it stops with Refused past `max_entries`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_ENTRIES = 1_000_000  # a walk past this many entries is refused (the kernel's disk caps its inodes far below)
GONE = (errno.ENOENT, errno.ELOOP, errno.ENOTDIR)  # the entry went away or was swapped for a link meanwhile


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
                if exc.errno not in (*GONE, errno.ENOTEMPTY):
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
