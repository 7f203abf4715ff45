"""The kernel's disks: every folder a kernel can write lives on a filesystem of its own with a hard cap on bytes AND
on inodes, so the cap holds whatever the kernel does (fallocate, a fast writer, many small files, a deep tree) and
nothing of ours has to walk its trees to enforce it. stdlib only.

Where the evaluator is root, the evaluation gets a mount namespace of its own (`private_mounts`) and two sized tmpfs
in it (`mount_disks`): the work disk (its folder, its `io/`, its build folder; `work_dir_mb`, `work_dir_files`) and
the tmp disk (its /tmp, /var/tmp and /dev/shm; `tmp_mb`, `tmp_files`). Both vanish with the namespace when the
evaluation's last process ends: clean-up needs no walk, and nothing the kernel wrote ever reaches the host's disk.
A write past a cap fails with ENOSPC; the orchestrator's disk_watch.py reads each filesystem's own count (statvfs,
no walk) and names the cap that was reached, bytes or inodes, for the verdict. Without root (no mounts) the kernel's
folders are plain folders, which disk_watch.py counts with a bounded walk by descriptors.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

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


def mount_tmpfs(target: str, *, size: int, inodes: int, mode: int = 0o755) -> None:
    """A tmpfs of `size` bytes and `inodes` inodes at `target` (no set-uid programs, no devices); root-owned."""
    options = f"size={max(size, 4096)},nr_inodes={max(inodes, 16)},mode={mode:o}".encode()
    _libc_call("mount", b"kbv-kernel", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options)


def mount_disks(work: str, caps: DiskCaps) -> None:
    """The kernel's two disks in the evaluation's folder `work` (their mount points already made). Call in a private
    mount namespace."""
    mount_tmpfs(f"{work}/{WORK_DISK}", size=caps.work_bytes, inodes=caps.work_files)
    mount_tmpfs(f"{work}/{TMP_DISK}", size=caps.tmp_bytes, inodes=caps.tmp_files)
