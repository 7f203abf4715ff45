"""Red team, the boundary around the kernel (issue: sandbox the kernel): the host. Each kernel here attacks the
machine it runs on (the app's data and VAR_DIR, the repository, the home folder, host services on the loopback,
other processes' environment, files left in /tmp) and, if the attack works, raises with what it got (so the evidence
would be in the record for all to read); if the attack fails it computes the right answer. A kernel the sandbox
contains is therefore credited, and the test also checks the host for what the kernel tried to leave or reach.

These run the real harness on the CPU in CI (as root there, so each kernel gets its own uid and bubblewrap's
namespaces: evaluator/harness/sandbox/namespaces.py). Kernels against each other and the evaluator's processes:
test_sandbox_processes.py; the GPU cases run on the H200: benchmarks/sandbox_gpu.py.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from evaluator.runner import run_evaluation
from tests.conftest import processes_with
from tests.redteam.sandbox_helpers import RELU, needs_namespaces

pytestmark = [needs_namespaces, pytest.mark.slow]

ATTACK = """
import glob, os, socket, subprocess, sys, time
import torch
import torch.nn as nn

MARKER = "__MARKER__"
PATHS = __PATHS__
PORTS = __PORTS__
PID = __PID__
SECRET = "__SECRET__"
got = []

def attempt(name, fn):
    try:
        value = fn()
    except Exception:
        return
    if value:
        got.append(f"{name}: {str(value)[:200]}")

def read(path):
    with open(path, "rb") as fh:
        return fh.read(200) or b"(empty file)"

for path in PATHS:  # the app's data, other evaluations' folders, /root, /home
    attempt(f"read {path}", lambda p=path: read(p))
    attempt(f"list {path}", lambda p=path: os.listdir(p))
for pattern in PATHS:
    for found in glob.glob(pattern) if "*" in pattern else []:
        attempt(f"glob {found}", lambda p=found: read(p) if os.path.isfile(p) else os.listdir(p))
for port in PORTS:  # the database, the broker, the web app, a listener of the test's own
    def connect(port=port):
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return f"connected to 127.0.0.1:{port}"
    attempt(f"port {port}", connect)
def other_interfaces():  # asked of the kernel's own network namespace (netlink), not of a listing
    names = [name for _, name in socket.if_nameindex() if name != "lo"]
    routes = open("/proc/net/route").read().splitlines()[1:]
    return names or routes
attempt("network interfaces or routes", other_interfaces)
def environ_of_others():
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            if SECRET.encode() in open(env, "rb").read():
                return env
        except OSError:
            pass
attempt("environment of other processes", environ_of_others)
attempt("signal the evaluator", lambda: os.kill(PID, 0) is None)
for folder in ("/tmp", "/var/tmp", "/dev/shm"):  # must vanish with the sandbox
    attempt("leave a file", lambda f=folder: open(f"{f}/{MARKER}", "w").write("left behind") and None)
# outlive the evaluation: a detached grandchild that would sleep for ten minutes
DAEMON = "import os, time; os.fork() and os._exit(0); os.setsid(); time.sleep(600)"  # double fork, own session
subprocess.Popen([sys.executable, "-c", DAEMON, MARKER], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(50):  # the daemon must really run, or "nothing outlived the evaluation" would prove nothing
    time.sleep(0.1)
    if any(MARKER.encode() in open(f, "rb").read() for f in glob.glob("/proc/[0-9]*/cmdline") if os.path.exists(f)):
        break
else:
    raise RuntimeError("the test's daemon did not start")
if got:
    raise RuntimeError("SANDBOX ESCAPE " + " | ".join(got))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _attack(marker: str, paths: list[str], ports: list[int], secret: str) -> str:
    return (
        ATTACK.replace("__MARKER__", marker)
        .replace("__PATHS__", repr(paths))
        .replace("__PORTS__", repr(ports))
        .replace("__PID__", str(os.getpid()))
        .replace("__SECRET__", secret)
    )


@pytest.fixture
def listener():
    """A TCP server on the host's loopback, standing for the web app, the database and the broker."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[str] = []

    def accept() -> None:
        server.settimeout(0.5)
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append("connection")
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


@pytest.fixture
def request_cleanup():
    paths: list[Path] = []
    yield paths
    for path in paths:
        path.unlink(missing_ok=True)


def test_a_kernel_reaches_nothing_of_the_host(tmp_path, listener, monkeypatch, request_cleanup):
    port, accepted = listener
    secret = f"kbv-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("SECRET_KEY", secret)  # in this (the evaluator's) process environment, as in a worker's
    var = tmp_path / "var"  # the app's data folder, as `make install` leaves it
    var.mkdir(mode=0o700)
    (var / "db.sqlite3").write_text("tokens: staff-token-123")
    (var / "db.sqlite3").chmod(0o600)
    world = tmp_path / "world-readable"  # what the uid layer alone would not hide
    world.mkdir(mode=0o755)
    (world / "settings.env").write_text("DATABASE_URL=postgresql://...")
    (world / "settings.env").chmod(0o644)
    marker = f"kbv-left-{uuid.uuid4().hex}"
    home_secret = Path.home() / f".kbv-test-{uuid.uuid4().hex}"  # the evaluator user's home: /root in CI
    home_secret.write_text("ssh key")
    home_secret.chmod(0o644)
    request_cleanup.append(home_secret)
    paths = [
        str(var / "db.sqlite3"),
        str(var),
        str(world / "settings.env"),
        str(Path(__file__).resolve().parents[2] / "config" / "settings.py"),  # the repository beyond the harness
        str(home_secret),
        "/home",
        "/etc/shadow",
        str(tmp_path / "work" / "*" / "reference" / "*"),
    ]
    record = run_evaluation(
        problem_source=RELU,
        kernel_source=_attack(marker, paths, [port, 5432, 6379, 5672, 8000], secret),
        device="cpu",
        timeout=120,
        work_root=tmp_path / "work",
        options={"quick": True},
    )
    assert record["environment"]["sandbox"] == "namespaces"
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    assert not accepted, "the kernel connected to a host service"
    time.sleep(0.5)
    assert not processes_with(marker), "a process of the kernel outlived its evaluation"
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not (Path(folder) / marker).exists(), f"the kernel left a file in {folder}"
    assert not list((tmp_path / "work").glob("eval-*")), "the evaluation's work folder was left behind"


READ_ALL = """
import torch
import torch.nn as nn

got = []
for path in __PATHS__:
    try:
        with open(path, "rb") as fh:
            got.append(f"{path}: {fh.read(20)!r}")
    except OSError:
        pass
if got:
    raise RuntimeError("READ THE APP'S DATA " + " | ".join(got[:5]))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


@pytest.mark.parametrize("mode", ["namespaces", "uid"])
def test_no_kernel_opens_a_file_under_var_dir(tmp_path, mode):
    """VAR_DIR as `make install` and a first migrate leave it; its work folders are where kernels run (so the
    evaluator lets their uids pass through it). Without namespaces ("uid"), file modes alone must keep the database
    and the broker's messages out of reach; with them, nothing of VAR_DIR is even mounted."""
    if mode == "uid" and os.geteuid() != 0:
        pytest.skip("the uid layer needs root")
    var = tmp_path / "var"
    env = {**os.environ, "VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "x"}
    env.pop("DATABASE_URL", None)
    env.pop("SQLITE_PATH", None)
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert stat.S_IMODE(var.stat().st_mode) & 0o077 == 0, "VAR_DIR must be private to the app's user"
    files = [p for p in var.rglob("*") if p.is_file()]
    assert any(p.name == "db.sqlite3" for p in files)
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0 or path.parent.name == "work", path
    record = _run_in_mode(mode, var, files)  # work_root var/work: EVALUATOR_WORK_DIR's default, inside VAR_DIR
    assert record["environment"]["sandbox"] == mode
    assert record["status"] == "ok" and record["correct"] is True, record["error"]


def _run_in_mode(mode: str, var: Path, files: list[Path]) -> dict:
    previous = os.environ.get("KBV_SANDBOX")
    os.environ["KBV_SANDBOX"] = mode
    try:
        return run_evaluation(
            problem_source=RELU,
            kernel_source=READ_ALL.replace("__PATHS__", repr([str(p) for p in files])),
            device="cpu",
            timeout=120,
            work_root=var / "work",
            options={"quick": True},
        )
    finally:
        if previous is None:
            os.environ.pop("KBV_SANDBOX", None)
        else:
            os.environ["KBV_SANDBOX"] = previous
