"""The kernel's disks and the walks over kernel-written trees (sandbox/disk.py, sandbox/beneath.py): sized
filesystems that hold their byte and inode caps whatever is written (the verdict names the cap reached), and walks
that never recurse, never follow a link and stop at a bound, so no tree a kernel builds breaks the side that cleans
up after it."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.harness.sandbox.beneath import Refused, open_trusted_dir, remove_tree
from evaluator.harness.sandbox.disk import DiskCaps
from evaluator.harness.sandbox.disk_watch import DiskWatch
from evaluator.harness.sandbox.trees import tree_usage, walk

ROOT = os.geteuid() == 0


def _chain(top: Path, levels: int, *, files: bool = False) -> None:
    """A folder chain `levels` deep under `top` (by descriptors: its path is longer than PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(levels):
        os.mkdir("d", dir_fd=fd)
        if files:
            os.close(os.open(f"f{level}", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)


def test_a_tree_2000_levels_deep_with_planted_links_is_removed_without_recursion(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("host file")
    tree = tmp_path / "tree"
    tree.mkdir()
    _chain(tree, 2000, files=True)
    (tree / "link-to-victim").symlink_to(victim)  # removed as a link, never followed
    (tree / "file-link").symlink_to(victim / "keep.txt")
    with open_trusted_dir(tmp_path) as parent:
        remove_tree(parent, "tree")
    assert not tree.exists()
    assert (victim / "keep.txt").read_text() == "host file"


def test_removal_and_walks_stop_at_their_bound(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(50):
        (tree / f"f{i}").write_text("x")
    with open_trusted_dir(tmp_path) as parent:
        with pytest.raises(Refused):
            remove_tree(parent, "tree", max_entries=10)
        with open_trusted_dir(tree) as fd:
            with pytest.raises(Refused):
                list(walk(fd, max_entries=10))
            assert tree_usage(fd, max_entries=10).entries == 11  # over the bound: counted as just past it
        remove_tree(parent, "tree")


def test_a_deep_tree_is_counted_as_too_deep_not_walked_to_the_bottom(tmp_path):
    _chain(tmp_path, 100)
    with open_trusted_dir(tmp_path) as fd:
        usage = tree_usage(fd, max_depth=32)
    assert usage.too_deep and usage.entries == 33
    with open_trusted_dir(tmp_path.parent) as parent:
        remove_tree(parent, tmp_path.name)


def test_without_a_filesystem_of_its_own_the_watch_walks_and_names_the_cap(tmp_path):
    work, tmp = tmp_path / "kernel", tmp_path / "kernel-tmp"
    work.mkdir()
    tmp.mkdir()
    caps = DiskCaps(work_bytes=1 << 20, work_files=20, tmp_bytes=1 << 20, tmp_files=20)
    watch = DiskWatch(os.open(work, os.O_RDONLY), os.open(tmp, os.O_RDONLY), caps, mounted=False)
    try:
        assert not watch.mounted and watch.reached() is None
        for i in range(25):
            (work / f"f{i}").write_text("x")
        assert "20 files and folders" in (watch.reached() or "")
        for i in range(25):
            (work / f"f{i}").unlink()
        (tmp / "big").write_bytes(b"x" * (2 << 20))
        assert "/tmp holds its cap of 1 MiB (bytes)" in (watch.reached() or "")
    finally:
        watch.close()


# Run as a child in a mount namespace of its own (the harness's own set-up, disk.py), so nothing is mounted here.
CHILD = """
import errno, json, os, sys
from pathlib import Path
from evaluator.harness.sandbox.disk import DiskCaps, mount_disks, private_mounts
from evaluator.harness.sandbox.disk_watch import DiskWatch
work = Path(sys.argv[1])
caps = DiskCaps(work_bytes=1 << 20, work_files=64, tmp_bytes=1 << 20, tmp_files=64)
private_mounts()
mount_disks(str(work), caps)
disk, tmp = work / "kernel", work / "kernel-tmp"
watch = DiskWatch(os.open(disk, os.O_RDONLY), os.open(tmp, os.O_RDONLY), caps, mounted=True)
out = {"mounted": watch.mounted, "start": watch.reached()}
fd = os.open(disk / "big", os.O_WRONLY | os.O_CREAT, 0o644)
try:
    os.posix_fallocate(fd, 0, 12 << 30)  # 12 GiB at once: refused outright
    out["fallocate"] = "allocated"
except OSError as exc:
    out["fallocate"] = errno.errorcode[exc.errno]
written = 0
try:
    while True:
        written += os.write(fd, b"x" * 65536)
except OSError as exc:
    out["write_error"] = errno.errorcode[exc.errno]
out["written"] = written
out["bytes_full"] = watch.reached()
os.close(fd)
os.unlink(disk / "big")
made = 0
try:
    while True:
        os.close(os.open(tmp / f"f{made}", os.O_WRONLY | os.O_CREAT, 0o644))
        made += 1
except OSError as exc:
    out["create_error"] = errno.errorcode[exc.errno]
out["files"] = made
out["files_full"] = watch.reached()
print(json.dumps(out))
"""


@pytest.mark.skipif(not ROOT, reason="mounting the kernel's disks needs root")
def test_sized_filesystems_hold_both_caps_and_the_watch_names_which(tmp_path):
    for name in ("kernel", "kernel-tmp"):
        (tmp_path / name).mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["mounted"] is True and out["start"] is None
    assert out["fallocate"] == errno.errorcode[errno.ENOSPC]
    assert out["write_error"] == "ENOSPC" and out["written"] <= 1 << 20
    assert out["bytes_full"] == "disk limit reached: the kernel's work folder holds its cap of 1 MiB (bytes)"
    assert out["create_error"] == "ENOSPC" and out["files"] < 64
    assert out["files_full"] == "disk limit reached: the kernel's /tmp holds its cap of 64 files and folders"
    assert not os.listdir(tmp_path / "kernel")  # mounted in the child's namespace only: gone with it
