"""Red team, the boundary around the kernel: its disks. Every folder a kernel can write (its own folder, the `io/`
folder its outputs go through, its build folder, /tmp) is on a filesystem with a hard cap on bytes and on files and
folders (sandbox/disk.py), so the cap holds however fast or however the kernel writes, and the verdict names the cap
reached. Each evaluation ends with a record and leaves no work folder behind, a tree 2,000 levels deep included.

Attacks tried on main 22ad196 (the watchdog that walked the folders once a second): fallocate put 12 GiB down in
0.035 s, io/ was never counted (5 GiB written), ~250,000 files passed (inodes were not counted), and a tree 1,500
levels deep ended the evaluation without a record (RecursionError in the clean-up).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluator.runner import run_evaluation
from tests.redteam.sandbox_helpers import RELU, needs_namespaces

pytestmark = [needs_namespaces, pytest.mark.slow]

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sized filesystems are mounted only where root runs")

MODEL = """
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

FILL = (
    """
import errno, os
import torch
import torch.nn as nn

WHERE = __WHERE__
LIMIT = 4 << 30  # never more than this, even where no cap holds it
written = 0
fd = os.open(os.path.join(WHERE, "filler.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
try:
    os.posix_fallocate(fd, 0, 12 << 30)  # 12 GiB at once, before any watchdog could look
    written = 12 << 30
except OSError:
    pass
block = b"x" * (1 << 20)
try:
    while written < LIMIT:
        written += os.write(fd, block)
except OSError as exc:
    assert exc.errno == errno.ENOSPC, exc
if written > (__CAP_MB__ << 20):
    raise RuntimeError(f"ESCAPED: wrote {written >> 20} MiB past a cap of __CAP_MB__ MiB")
"""
    + MODEL
)

MANY_FILES = (
    """
import errno, os
import torch
import torch.nn as nn

WHERE = __WHERE__
made = 0
try:
    while made < 250_000:
        os.close(os.open(os.path.join(WHERE, f"f{made}"), os.O_WRONLY | os.O_CREAT, 0o644))
        made += 1
except OSError as exc:
    assert exc.errno == errno.ENOSPC, exc
if made >= __CAP__:
    raise RuntimeError(f"ESCAPED: made {made} files past a cap of __CAP__")
"""
    + MODEL
)


def _evaluate(tmp_path, kernel: str, **options) -> dict:
    record = run_evaluation(
        problem_source=RELU,
        kernel_source=kernel,
        device="cpu",
        timeout=240,
        work_root=tmp_path / "work",
        options={"quick": True, **options},
    )
    assert not list((tmp_path / "work").glob("eval-*")), "the evaluation's work folder was left behind"
    return record


@ROOT_ONLY
@pytest.mark.parametrize(
    "where", ["os.getcwd()", "os.path.join(os.path.dirname(os.getcwd()), 'io')", "os.environ['TORCH_EXTENSIONS_DIR']"]
)
def test_a_fast_writer_stops_at_the_work_folders_byte_cap(tmp_path, where):
    kernel = FILL.replace("__WHERE__", where).replace("__CAP_MB__", "64")
    record = _evaluate(tmp_path, kernel, work_dir_mb=64)
    assert record["status"] == "runtime_error" and "ESCAPED" not in record["error"], record["error"]
    assert "disk limit reached: the kernel's work folder holds its cap of 64 MiB (bytes)" in record["error"]
    assert record["environment"]["limits"]["disk"]["enforced_by"] == "sized tmpfs (bytes and inodes)"


@ROOT_ONLY
def test_tmp_has_its_own_caps(tmp_path):
    kernel = FILL.replace("__WHERE__", "'/tmp'").replace("__CAP_MB__", "32")
    record = _evaluate(tmp_path, kernel, tmp_mb=32)
    assert "ESCAPED" not in record["error"], record["error"]
    assert "disk limit reached: the kernel's /tmp holds its cap of 32 MiB (bytes)" in record["error"]


@ROOT_ONLY
@pytest.mark.parametrize(("where", "cap"), [("os.getcwd()", "work_dir_files"), ("'/dev/shm'", "tmp_files")])
def test_many_small_files_stop_at_the_inode_cap(tmp_path, where, cap):
    kernel = MANY_FILES.replace("__WHERE__", where).replace("__CAP__", "3000")
    record = _evaluate(tmp_path, kernel, **{cap: 3000})
    assert "ESCAPED" not in record["error"], record["error"]
    label = "work folder" if cap == "work_dir_files" else "/tmp"
    assert f"disk limit reached: the kernel's {label} holds its cap of 3000 files and folders" in record["error"]


DEEP = (
    """
import os
from pathlib import Path
import torch
import torch.nn as nn

here = os.open(".", os.O_RDONLY)
for _ in range(2000):  # a folder chain 2,000 levels deep in its own folder, left for the harness to clean up
    os.mkdir("d")
    os.chdir("d")
os.fchdir(here)
"""
    + MODEL
)


def test_a_tree_2000_levels_deep_still_ends_with_a_record_and_no_work_folder(tmp_path):
    record = _evaluate(tmp_path, DEEP)
    assert record["status"] == "ok" and record["correct"] is True, record["error"]


UNPRIVILEGED = """
import json, sys
from pathlib import Path
from evaluator.runner import run_evaluation
record = run_evaluation(problem_source=sys.argv[2], kernel_source=sys.argv[3], device="cpu", timeout=240,
                        work_root=Path(sys.argv[1]), options={"quick": True, "work_dir_files": 500})
print(json.dumps({"error": record["error"], "status": record["status"], "environment": record["environment"]}))
"""


@ROOT_ONLY  # to become a user that is not root: the evaluator as uid 65534, with no way to root at all
def test_without_root_the_caps_hold_by_a_bounded_walk_and_the_record_says_so(tmp_path):
    import json
    import subprocess
    import sys

    from evaluator.harness.sandbox.privileges import open_path

    work = tmp_path / "work"
    work.mkdir()
    os.chown(work, 65534, 65534)
    open_path(work, (65534, 65534), itself=True)
    kernel = MANY_FILES.replace("__WHERE__", "os.getcwd()").replace("__CAP__", "500")
    done = subprocess.run(
        [sys.executable, "-c", UNPRIVILEGED, str(work), RELU, kernel],
        user=65534, group=65534, extra_groups=[], cwd=Path(__file__).resolve().parents[2],
        env={"PATH": os.environ["PATH"], "HOME": str(work)}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    environment = record["environment"]
    assert environment["orchestrator"]["launcher"] == "same user" and environment["orchestrator"]["uid"] == 65534
    assert environment["limits"]["disk"]["enforced_by"].startswith("watchdog walk")
    assert "ESCAPED" not in record["error"], record["error"]
    assert "disk limit reached: the kernel's work folder holds its cap of 500 files and folders" in record["error"]
    assert not list(work.glob("eval-*")), "the evaluation's work folder was left behind"
