"""File operations inside a folder the kernel can write, made so that nothing the kernel plants there can send them
elsewhere. stdlib only.

The rule (docs/protocol.md, "The boundary"): the privileged side never resolves a path inside a kernel-writable
folder. Everything here starts from a directory descriptor of a folder the kernel cannot replace (it sits in a
folder of ours), walks one component at a time with O_NOFOLLOW (a planted symbolic link fails with ELOOP instead of
being followed, like openat2's RESOLVE_NO_SYMLINKS), checks what it opened with fstat on the descriptor (a FIFO or
a device is never read), and reads or writes through that descriptor. A kernel racing us (swapping a file for a
link between two calls) can only make an operation fail, never redirect it: the name is resolved once, by the
kernel of the operating system, without following links.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(OSError):
    """What the kernel left there is not a plain file or folder (a link, a FIFO, a device) or is too large."""


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


def copy_out(
    src_fd: int, dst: Path, *, keep: Callable[[str], bool], max_bytes: int, max_files: int = 10_000
) -> list[str]:
    """Copy the plain files under the kernel's folder `src_fd` whose relative path passes `keep` into `dst` (a new
    folder of ours). Links, FIFOs, sockets and devices are skipped, never followed or read; the total is capped at
    `max_bytes` (Refused past it, with `dst` removed). Returns the relative paths copied."""
    copied: list[str] = []
    budget = [max_bytes]
    dst.mkdir(parents=True, exist_ok=False)

    def walk(fd: int, target: Path, prefix: str) -> None:
        for entry in sorted(os.listdir(fd)):
            rel = f"{prefix}{entry}"
            try:
                info = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(info.st_mode):
                try:
                    with open_dir(fd, entry) as sub:
                        (target / entry).mkdir(mode=0o755)
                        walk(sub, target / entry, rel + "/")
                except (FileNotFoundError, NotADirectoryError, Refused):
                    continue
                except OSError as exc:
                    if exc.errno == errno.ELOOP:  # swapped for a link since the stat
                        continue
                    raise
            elif stat.S_ISREG(info.st_mode) and keep(rel):
                if len(copied) >= max_files:
                    raise Refused(f"more than {max_files} files")
                try:
                    src = open_regular(fd, entry)  # the budget is enforced while copying
                except (FileNotFoundError, Refused):
                    continue
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        continue
                    raise
                try:
                    out = os.open(str(target / entry), CREATE_FLAGS, 0o644)
                    try:
                        budget[0] -= _copy_fd(src, out, budget[0])
                        seen = os.fstat(src)  # ninja compares times: a build copied back must stay up to date
                        os.utime(out, ns=(seen.st_atime_ns, seen.st_mtime_ns))
                    finally:
                        os.close(out)
                finally:
                    os.close(src)
                copied.append(rel)

    try:
        walk(src_fd, dst, "")
    except BaseException:
        shutil.rmtree(dst, ignore_errors=True)
        raise
    return copied


def fresh_dir(parent_fd: int, name: str, owner: tuple[int, int] | None, mode: int = 0o700) -> int:
    """Replace whatever is at `name` in `parent_fd` (a link, a file, a folder the kernel filled) by a new empty
    folder owned by `owner`, and return a descriptor of it (the caller closes it). The descriptor names the folder
    we made, whatever the kernel renames later."""
    _check_name(name)
    with contextlib.suppress(FileNotFoundError):
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=parent_fd)  # fd-based: immune to links planted inside
        else:
            os.unlink(name, dir_fd=parent_fd)
    os.mkdir(name, mode, dir_fd=parent_fd)
    fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    if owner is not None:
        os.fchown(fd, *owner)
    os.fchmod(fd, mode)
    return fd


def copy_in(src: Path, dst_fd: int, owner: tuple[int, int] | None) -> int:
    """Copy a tree of ours (a cache entry) into a fresh folder of the kernel's (`dst_fd`, from fresh_dir), each file
    created new through the folder's descriptor and given to `owner`. Returns the bytes copied."""
    total = 0
    for entry in sorted(os.listdir(src)):
        path = src / entry
        if path.is_symlink():
            continue
        if path.is_dir():
            os.mkdir(entry, 0o755, dir_fd=dst_fd)
            with open_dir(dst_fd, entry) as sub:
                if owner is not None:
                    os.fchown(sub, *owner)
                total += copy_in(path, sub, owner)
        elif path.is_file():
            out = os.open(entry, CREATE_FLAGS, stat.S_IMODE(path.stat().st_mode) | 0o600, dir_fd=dst_fd)
            try:
                if owner is not None:
                    os.fchown(out, *owner)
                with open(path, "rb") as fh:
                    total += _copy_fd(fh.fileno(), out, 1 << 40)
                seen = path.stat()
                os.utime(out, ns=(seen.st_atime_ns, seen.st_mtime_ns))
            finally:
                os.close(out)
    return total


def empty_dir(fd: int) -> None:
    """Remove everything inside the folder `fd` (links removed as links, folders through descriptors)."""
    for name in os.listdir(fd):
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
