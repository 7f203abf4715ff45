"""The kernel's disks: every folder a kernel can write lives on a filesystem of its own with a hard cap on bytes AND
on inodes, so the cap holds whatever the kernel does (fallocate, a fast writer, many small files, a deep tree) and
nothing of ours has to walk its trees to enforce it. stdlib only.

Where the evaluator is root, the evaluation gets a mount namespace of its own (`private_mounts`) and two sized tmpfs
in it (`mount_disks`): the work disk (its folder, its `io/`, its build folder; `work_dir_mb`, `work_dir_files`) and
the tmp disk (its /tmp, /var/tmp and /dev/shm; `tmp_mb`, `tmp_files`). Both vanish with the namespace when the
evaluation's last process ends: clean-up needs no walk, and nothing the kernel wrote ever reaches the host's disk.
A write past a cap fails with ENOSPC; `DiskWatch` reads each filesystem's own count (statvfs, no walk) and names the
cap that was reached, bytes or inodes, for the verdict.

Without root (no mounts), the kernel's folders are plain folders and `DiskWatch` counts them with the bounded,
descriptor-based walk of beneath.tree_usage: a tree past the entries cap or deeper than the walk enters is over the
limit too.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.sandbox.beneath import MAX_DEPTH, tree_usage

WORK_DISK = "kernel"  # in the evaluation's folder: the kernel's folder, io/ and build/
TMP_DISK = "kernel-tmp"  # in the evaluation's folder: tmp/, var-tmp/, shm/ (bound at /tmp, /var/tmp, /dev/shm)
TMP_FOLDERS = ("tmp", "var-tmp", "shm")
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 1 << 14, 1 << 18


@dataclass(frozen=True)
class DiskCaps:
    """Bytes and inodes (files and folders) the kernel may keep on each of its disks."""

    work_bytes: int
    work_files: int
    tmp_bytes: int
    tmp_files: int


def _libc_call(name: str, *args: object) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")


def private_mounts() -> None:
    """This process (and what it starts) gets a mount namespace of its own, with nothing propagated back to the host.
    Only system calls: safe between fork and exec."""
    _libc_call("unshare", CLONE_NEWNS)
    _libc_call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)


def mount_tmpfs(target: str, *, size: int, inodes: int, mode: int = 0o711) -> None:
    """A tmpfs of `size` bytes and `inodes` inodes at `target` (no set-uid programs, no devices); root-owned."""
    options = f"size={max(size, 4096)},nr_inodes={max(inodes, 16)},mode={mode:o}".encode()
    _libc_call("mount", b"kbv-kernel", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options)


def mount_disks(work: str, caps: DiskCaps) -> None:
    """The kernel's two disks in the evaluation's folder `work` (their mount points already made). Call in a private
    mount namespace."""
    mount_tmpfs(f"{work}/{WORK_DISK}", size=caps.work_bytes, inodes=caps.work_files)
    mount_tmpfs(f"{work}/{TMP_DISK}", size=caps.tmp_bytes, inodes=caps.tmp_files)


def is_mounted(path: Path) -> bool:
    """Whether `path` is a filesystem of its own (one of the kernel's disks), not a folder of its parent's."""
    try:
        return os.stat(path).st_dev != os.stat(path.parent).st_dev
    except OSError:
        return False


class DiskWatch:
    """Which cap, if any, the kernel's disks have reached: from each filesystem's own counts when they are sized
    filesystems, else from a bounded walk of the folders. Holds a descriptor of each (opened once, ours)."""

    def __init__(self, work: Path, tmp: Path, caps: DiskCaps) -> None:
        self.caps = caps
        self.mounted = is_mounted(work) and is_mounted(tmp)
        self._fds = {
            "work folder": os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC),
            "/tmp": os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC),
        }

    def reached(self) -> str | None:
        """Why the kernel must stop (a cap reached, named), else None."""
        caps = ((self.caps.work_bytes, self.caps.work_files), (self.caps.tmp_bytes, self.caps.tmp_files))
        for (label, fd), (max_bytes, max_files) in zip(self._fds.items(), caps, strict=True):
            if self.mounted:
                info = os.fstatvfs(fd)
                full_bytes, full_files, deep = info.f_bavail == 0, info.f_favail == 0, False
            else:
                usage = tree_usage(fd, max_entries=max_files)
                full_bytes, full_files, deep = usage.bytes > max_bytes, usage.entries > max_files, usage.too_deep
            if full_bytes:
                return f"disk limit reached: the kernel's {label} holds its cap of {max_bytes >> 20} MiB (bytes)"
            if full_files or deep:
                extra = f"; a folder tree deeper than {MAX_DEPTH} levels" if deep and not full_files else ""
                return f"disk limit reached: the kernel's {label} holds its cap of {max_files} files and folders{extra}"
        return None

    def report(self) -> dict[str, object]:
        """For the record (environment.limits.disk): the caps and what holds them."""
        how = "sized tmpfs (bytes and inodes)" if self.mounted else "watchdog walk (no root: no filesystem of its own)"
        caps = self.caps
        return {"enforced_by": how, "work_bytes": caps.work_bytes, "work_files": caps.work_files,
                "tmp_bytes": caps.tmp_bytes, "tmp_files": caps.tmp_files}  # fmt: skip

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}
