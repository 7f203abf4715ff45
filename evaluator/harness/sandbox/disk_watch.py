"""Which cap of the kernel's disks (disk.py) the kernel has reached, for the verdict: the orchestrator's watchdog
(spawn.py) asks after each step and every fifth of a second. stdlib only, no privilege.

Where the disks are sized filesystems (root ran the launcher) the answer is each filesystem's own count (statvfs on
a descriptor of its root, no walk): a write past a cap has already failed with ENOSPC, and a full disk names the cap,
bytes or inodes. Without root they are plain folders, counted with the bounded walk by descriptors of trees.py: a
tree past the entries cap, or deeper than the walk enters, is over the limit too.
"""

from __future__ import annotations

import os

from evaluator.harness.sandbox.disk import DiskCaps
from evaluator.harness.sandbox.trees import MAX_DEPTH, tree_usage


class DiskWatch:
    """Which cap, if any, the kernel's disks have reached: from each filesystem's own counts when they are sized
    filesystems, else from a bounded walk of the folders, through descriptors of their roots."""

    def __init__(self, work: int, tmp: int, caps: DiskCaps, *, mounted: bool) -> None:
        """`work` and `tmp`: descriptors of the two disks' roots (the launcher's; closed with the watch)."""
        self.caps = caps
        self.mounted = mounted
        self._fds = {"work folder": work, "/tmp": tmp}

    def reached(self) -> str | None:
        """Why the kernel must stop (a cap reached, named), else None."""
        caps = ((self.caps.work_bytes, self.caps.work_files), (self.caps.tmp_bytes, self.caps.tmp_files))
        for (label, fd), (max_bytes, max_files) in zip(self._fds.items(), caps, strict=True):
            if self.mounted:
                info = os.fstatvfs(fd)
                full_bytes, full_files, deep = info.f_bavail == 0, info.f_favail == 0, False
            else:
                try:
                    usage = tree_usage(fd, max_entries=max_files)
                except OSError as exc:  # a folder the kernel made unreadable: what cannot be counted is not allowed
                    return f"disk limit: the kernel's {label} could not be counted ({exc.strerror})"
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
