"""An evaluation's folders, made by the launcher through descriptors: every folder below the evaluation's own (which
the runner made and owns) is created with mkdirat, opened with O_NOFOLLOW and given its owner and mode through its
descriptor, so a runner racing the launcher (swapping a folder for a link) cannot point root at anything else. The
kernel's disks are mounted on the descriptor of their mount point (/proc/self/fd/N), never by path. stdlib only.

Owners, where root runs the launcher (O: the evaluation's orchestrator uid, K: its kernel's uid):
  harness/            the runner's, group O (2750): the spec, problem and kernel files are read by O
  reference/          O 0700: the reference worker's
  handoff/            O 0755: written by O, read by the kernel (bound read-only)
  sandbox-etc/        root 0755: the sandbox's passwd and group
  kernel/             a tmpfs, root 0755 (disk.py): candidate/ K:O 0750, io/ K:O 2770, build/ O:K 2770, .trash/
  kernel-tmp/         a tmpfs, root 0755: tmp/, var-tmp/, shm/ K 0700
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

from evaluator.harness.sandbox.beneath import DIR_FLAGS, FILE_FLAGS, open_dir, remove_tree
from evaluator.harness.sandbox.disk import TMP_DISK, TMP_FOLDERS, WORK_DISK, mount_tmpfs

HARNESS_FILES = ("spec.json", "problem.py", "kernel.py")
OURS = ("reference", "handoff", "sandbox-etc")  # removed by the launcher at the end (unless kept)


class Refused(Exception):
    """What the runner named is not a folder of its own: the evaluation is refused."""


def open_owned(path: str, owner: int, *, parent: int | None = None, group: int | None = None) -> int:
    """A descriptor of the folder `path` (relative to `parent`, else absolute) if it is a folder (not a link) owned
    by `owner` (the caller, as the kernel names it: never a folder of root's for a caller that is not root),
    writable by no other user and by no group but `group` (a folder the launcher already shared); Refused
    otherwise."""
    try:
        fd = os.open(path, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise Refused(f"cannot open {path}: {exc.strerror}") from exc
    info = os.fstat(fd)
    if info.st_uid != owner or info.st_mode & 0o002 or (info.st_mode & 0o020 and info.st_gid != group):
        os.close(fd)
        raise Refused(f"{path} is not a folder of the caller's own (uid {info.st_uid}, mode {info.st_mode:o})")
    return fd


def make_dir(parent: int, name: str, mode: int, owner: tuple[int, int] | None) -> int:
    """A new folder `name` in `parent` (none may be there), its mode and owner set through its descriptor."""
    os.mkdir(name, 0o700, dir_fd=parent)
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    if owner is not None:
        os.fchown(fd, *owner)
    os.fchmod(fd, mode)
    return fd


@contextlib.contextmanager
def made(parent: int, name: str, mode: int, owner: tuple[int, int] | None) -> Iterator[int]:
    fd = make_dir(parent, name, mode, owner)
    try:
        yield fd
    finally:
        os.close(fd)


def share_harness(work: int, group: int) -> None:
    """The runner's harness/ folder and the files the orchestrator reads in it, readable by the orchestrator's
    group; files written later (a standby's problem and kernel) take the group from the folder (set-group-ID)."""
    with open_dir(work, "harness") as harness:
        os.fchown(harness, -1, group)
        os.fchmod(harness, 0o2750)
        for name in HARNESS_FILES:
            try:
                fd = os.open(name, FILE_FLAGS, dir_fd=harness)
            except FileNotFoundError:
                continue
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.fchown(fd, -1, group)
                    os.fchmod(fd, 0o640)
            finally:
                os.close(fd)


def share_folder(fd: int, group: int, *, files: bool) -> None:
    """A folder the orchestrators share (the compile cache, the GPU locks, the CPU leases): their group's, set-group-
    ID so what they make in it stays the group's; with `files`, the lock files already in it too."""
    os.fchown(fd, -1, group)
    os.fchmod(fd, 0o2770)
    for name in os.listdir(fd)[:10_000] if files else ():
        try:
            file = os.open(name, FILE_FLAGS, dir_fd=fd)
        except OSError:
            continue
        try:
            if stat.S_ISREG(os.fstat(file).st_mode):
                os.fchown(file, -1, group)
                os.fchmod(file, 0o660)
        finally:
            os.close(file)


def mount_disk(work: int, name: str, size: int, files: int) -> int:
    """Mount a sized tmpfs (disk.py) on the runner's mount point `name` through its descriptor; a descriptor of
    the new filesystem's root."""
    with contextlib.suppress(FileExistsError):  # the runner makes it; a caller that did not gets one
        os.mkdir(name, 0o755, dir_fd=work)
    point = os.open(name, DIR_FLAGS, dir_fd=work)
    try:
        mount_tmpfs(f"/proc/self/fd/{point}", size=size, inodes=files)
    finally:
        os.close(point)
    root = os.open(name, DIR_FLAGS, dir_fd=work)
    info = os.fstat(root)
    if info.st_uid != 0 or info.st_dev == os.fstat(work).st_dev:
        os.close(root)
        raise Refused(f"{name} is not the filesystem just mounted there")
    return root


def kernel_folders(disk: int, tmp: int, kernel: tuple[int, int] | None, orchestrator: tuple[int, int] | None) -> None:
    """The kernel's folders on its two disks, fresh: see the module's table."""
    k_gid = kernel[1] if kernel else -1
    o_uid, o_gid = orchestrator if orchestrator else (-1, -1)
    # the kernel's folder: the orchestrator's group may list it (its disk watch walks it where no mount caps it)
    cand_owner = (kernel[0], o_gid) if kernel else None
    with made(disk, "candidate", 0o750 if kernel else 0o700, cand_owner) as cand, made(cand, "tmp", 0o700, kernel):
        pass
    for name, mode, owner in (("io", 0o2770, (kernel[0], o_gid) if kernel else None),
                              ("build", 0o2770, (o_uid, k_gid) if orchestrator else None),
                              (".trash", 0o700, None)):  # fmt: skip
        with made(disk, name, mode if owner else 0o700, owner):
            pass
    for name in TMP_FOLDERS:
        with made(tmp, name, 0o700, kernel):
            pass


def empty_build(disk: int, moved: int) -> None:
    """The build folder emptied in place (its bind in a running sandbox stays valid): each entry moved into the
    disk's trash, one rename each, nothing walked (the trash goes with the disk)."""
    with open_dir(disk, "build") as build, open_dir(disk, ".trash") as trash:
        for index, name in enumerate(os.listdir(build)):
            os.rename(name, f"{moved}-{index}", src_dir_fd=build, dst_dir_fd=trash)


def remove_ours(work: int, *, disks: bool) -> None:
    """The folders this launcher made on the host's disk (and the kernel's, where they were plain folders: no
    root, no mounts), removed without recursion and without following a link."""
    for name in OURS:
        with contextlib.suppress(OSError):
            remove_tree(work, name)
    if disks:
        for name in (WORK_DISK, TMP_DISK):
            with contextlib.suppress(OSError), open_dir(work, name) as folder:
                for entry in os.listdir(folder):
                    remove_tree(folder, entry)
