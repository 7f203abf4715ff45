"""Red team, the boundary seen from the privileged side: nothing of ours (the orchestrator, the reference worker, both
root here) reads, copies or writes through what the kernel can write. Each kernel plants links, FIFOs, forged
replies or escaping processes where the harness used to look, and each test asserts on the host: a root-only canary
that must appear in no record and no cache file, root-owned victim files and folders that must stay as they were,
and the compile cache's contents.

The real harness on the CPU (as root in CI: each kernel under its own uid, in bubblewrap's namespaces).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from evaluator.harness.orchestrator.compile_cache import keep_in_cache
from evaluator.runner import run_evaluation
from tests.redteam.sandbox_helpers import RELU, needs_namespaces

pytestmark = [needs_namespaces, pytest.mark.slow]

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the attacks target files of root's")
REPO = Path(__file__).resolve().parents[2]

HEADER = """
import os, sys, threading, time
import torch
import torch.nn as nn
CANARY = __CANARY__
VICTIM_FILE = __VICTIM_FILE__
VICTIM_DIR = __VICTIM_DIR__
"""

MODEL = """
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.fixture
def host(tmp_path):
    """A root-only secret, a root-owned file and a root-owned folder (searchable by everyone, like /etc/cron.d)."""
    secret_dir = tmp_path / "root-only"
    secret_dir.mkdir(mode=0o755)
    canary_text = f"kbv-canary-{uuid.uuid4().hex}"
    canary = secret_dir / "secret"
    canary.write_text(canary_text)
    canary.chmod(0o600)
    victim_file = secret_dir / "victim.conf"
    victim_file.write_text("untouched\n")
    victim_file.chmod(0o600)
    victim_dir = tmp_path / "victim.d"
    victim_dir.mkdir(mode=0o755)
    return {"canary": canary, "text": canary_text, "victim_file": victim_file, "victim_dir": victim_dir}


def _kernel(host: dict, body: str) -> str:
    head = (
        HEADER.replace("__CANARY__", repr(str(host["canary"])))
        .replace("__VICTIM_FILE__", repr(str(host["victim_file"])))
        .replace("__VICTIM_DIR__", repr(str(host["victim_dir"])))
    )
    return head + body + MODEL


def _evaluate(tmp_path: Path, kernel: str, **options) -> dict:
    return run_evaluation(
        problem_source=RELU,
        kernel_source=kernel,
        device="cpu",
        timeout=240,
        work_root=tmp_path / "work",
        compile_cache_dir=tmp_path / "cache",
        options={"quick": True, **options},
    )


def _untouched(host: dict) -> None:
    assert host["victim_file"].read_text() == "untouched\n", "root wrote where the kernel pointed"
    assert not list(host["victim_dir"].iterdir()), "root copied files where the kernel pointed"


def _no_canary_in_cache(tmp_path: Path, host: dict) -> None:
    for path in (tmp_path / "cache").rglob("*"):
        assert not path.is_symlink(), f"a link in the cache: {path}"
        if path.is_file():
            assert host["text"].encode() not in path.read_bytes(), f"the canary was copied into {path}"
            parts = path.relative_to(tmp_path / "cache").parts
            if len(parts) > 2 and parts[1] == "build":  # an entry's files: build products only
                assert keep_in_cache("/".join(parts[2:])), path


@ROOT_ONLY
def test_a_log_swapped_for_a_link_shows_no_host_file_in_the_verdict(tmp_path, host):
    kernel = _kernel(
        host,
        """
for name in ("candidate.log", "reference.log", "../candidate.log"):
    try:
        os.unlink(name)
    except OSError:
        pass
    try:
        os.symlink(CANARY, name)
    except OSError:
        pass
print("the kernel's own output")
sys.stdout.flush()
os._exit(3)
""",
    )
    record = _evaluate(tmp_path, kernel)
    assert record["status"] in {"compile_error", "runtime_error"}, record
    assert host["text"] not in json.dumps(record), "a root-only file's text is in the public record"
    assert "the kernel's own output" in record["error"]  # its output still reaches the verdict, through a pipe


@ROOT_ONLY
def test_a_build_folder_racing_files_and_links_puts_no_host_file_in_the_cache(tmp_path, host):
    kernel = _kernel(
        host,
        """
build = os.environ["TORCH_EXTENSIONS_DIR"]
os.makedirs(f"{build}/ext", exist_ok=True)
names = [f"{build}/ext/f{i}.so" for i in range(300)]
for name in names:
    with open(name, "w") as fh:
        fh.write("plain")
for target in (f"{build}/linked", f"{build}/ext/whole.so"):
    try:
        os.symlink(os.path.dirname(CANARY) if target.endswith("linked") else CANARY, target)
    except OSError:
        pass
try:
    os.mkfifo(f"{build}/ext/blocker.o")
except OSError:
    pass
with open(f"{build}/ext/data.bin", "wb") as fh:
    fh.write(b"x" * (8 << 20))  # not a build product: never kept

def swap():
    while True:
        for name in names:
            try:
                os.unlink(name)
                os.symlink(CANARY, name)
                os.unlink(name)
                with open(name, "w") as fh:
                    fh.write("plain")
            except OSError:
                pass

threading.Thread(target=swap, daemon=True).start()
time.sleep(0.2)
""",
    )
    record = _evaluate(tmp_path, kernel)
    assert host["text"] not in json.dumps(record)
    _no_canary_in_cache(tmp_path, host)
    assert not list((tmp_path / "cache").rglob("data.bin"))
    assert not list((tmp_path / "cache").rglob("blocker.o"))


@ROOT_ONLY
def test_fresh_worker_pairs_never_write_or_copy_where_the_kernel_points(tmp_path, host):
    """Process pairs: the second pair's start and its cache hit used to append to a planted candidate.log, overwrite
    a planted io/init.pt and copy the build into a build folder swapped for a link."""
    kernel = _kernel(
        host,
        """
for name, target in (("candidate.log", VICTIM_FILE), ("io/init.pt", VICTIM_FILE), ("io/params.pt", VICTIM_FILE)):
    try:
        if os.path.lexists(name):
            os.unlink(name)
        os.symlink(target, name)
    except OSError:
        pass
build = os.environ["TORCH_EXTENSIONS_DIR"]
os.makedirs(f"{build}/ext", exist_ok=True)
with open(f"{build}/ext/payload.so", "w") as fh:
    fh.write("* * * * * root touch /tmp/owned\\n")
CALLS = [0]

class Swapper:
    def __call__(self):
        CALLS[0] += 1
        if CALLS[0] == 3:
            import shutil
            for path in (f"{build}/ext", build):
                try:
                    shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
                    os.symlink(VICTIM_DIR, path)
                except OSError:
                    pass

SWAP = Swapper()

class ModelNew(nn.Module):
    def forward(self, x):
        SWAP()
        return torch.relu(x)
""",
    )
    kernel = kernel.replace(MODEL, "")
    record = _evaluate(tmp_path, kernel, process_pairs=2, max_process_pairs=2, pairs_below_ms=1000.0)
    _untouched(host)
    _no_canary_in_cache(tmp_path, host)
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    assert len(record["timing"].get("pairs") or []) == 2, record["timing"].get("process_pairs_policy")


@ROOT_ONLY
def test_children_in_their_own_sessions_count_against_the_memory_limit(tmp_path, host):
    kernel = _kernel(
        host,
        """
import subprocess
HOG = "import time; b = bytearray(900 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(120)"
kids = [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(3)]
time.sleep(6)
""",
    )
    # a worker alone (torch imported; a CUDA build of torch maps about 1 GB) stays well under 2,500 MB
    record = _evaluate(tmp_path, kernel, host_memory_mb=2500)
    assert record["status"] != "ok", "three setsid children of 900 MB each passed a 2,500 MB limit"
    assert "memory" in record["error"], record["error"]


def test_a_forged_reply_is_a_clear_rejection(tmp_path):
    kernel = """
import os, sys
import torch
import torch.nn as nn
os.write(int(sys.argv[2]), b'{"ok": true}\\n')

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
    record = _evaluate(tmp_path, kernel)
    assert record["status"] == "rejected", record
    assert "malformed" in record["error"] and "reply" in record["error"]


def test_a_load_step_that_never_ends_is_cut_at_its_own_bound(tmp_path):
    kernel = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        while True:
            pass
"""
    record = _evaluate(tmp_path, kernel, load_cold_timeout_s=8.0)
    assert record["status"] == "timeout", record
    assert "load step" in record["error"] and "8 s" in record["error"], record["error"]
    assert record["phases"]["compile"] < 60


@pytest.fixture
def tmp_checkout():
    """An interpreter and a work folder under /tmp, as a fresh clone there would have (its own venv)."""
    base = Path("/tmp") / f"kbv-checkout-{uuid.uuid4().hex[:8]}"
    venv = base / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    ours = [p for p in sys.path if p.endswith("-packages") and Path(p).is_dir()]
    (site / "kbv-host.pth").write_text("\n".join(ours) + "\n")  # torch from this venv, as if installed there
    os.chmod(base, 0o755)
    yield base, str(venv / "bin" / "python")
    subprocess.run(["rm", "-rf", str(base)], check=False)


def test_a_checkout_under_tmp_evaluates(tmp_checkout):
    base, python = tmp_checkout
    record = run_evaluation(
        problem_source=RELU,
        kernel_source="import torch\nimport torch.nn as nn\n" + MODEL,
        device="cpu",
        timeout=240,
        work_root=base / "var" / "work",
        python=python,
        options={"quick": True},
    )
    assert record["environment"]["sandbox"] == "namespaces"
    assert record["status"] == "ok" and record["correct"] is True, record["error"]


def test_the_install_probe_starts_the_real_interpreter_through_the_sandbox(tmp_checkout):
    base, python = tmp_checkout
    env = {**os.environ, "EVALUATOR_PYTHON": python, "EVALUATOR_WORK_DIR": str(base / "var" / "work")}
    done = subprocess.run(
        [sys.executable, "-m", "evaluator.harness.sandbox.namespaces"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "sandbox: namespaces", done.stdout + done.stderr
    broken = {**env, "EVALUATOR_PYTHON": str(base / "missing" / "python")}
    done = subprocess.run(
        [sys.executable, "-m", "evaluator.harness.sandbox.namespaces"],
        cwd=REPO,
        env=broken,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "cannot start this checkout's worker" in done.stdout, done.stdout + done.stderr
