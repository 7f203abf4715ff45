"""Red team, the boundary around the kernel (issue: sandbox the kernel). Each kernel here attacks the machine it runs
on and, if the attack works, raises with what it got (so the evidence would be in the record for all to read); if
the attack fails it computes the right answer. A kernel the sandbox contains is therefore credited, and the test
also checks the host for what the kernel tried to leave or reach.

These run the real harness on the CPU in CI (as root there, so each kernel gets its own uid and bubblewrap's
namespaces: evaluator/harness/namespaces.py). The GPU cases (the zero-copy hand-over through the sandbox, a hang in
CUDA timing) run on the H200: benchmarks/sandbox_gpu.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evaluator.harness.namespaces import choose_mode
from evaluator.runner import run_evaluation
from tests.conftest import processes_with

HERE = Path(__file__).resolve().parent
RELU = (HERE / "problems" / "relu.py").read_text()

try:
    MODE, WHY = choose_mode(uid=200000 if os.geteuid() == 0 else os.getuid(), gid=200000)
except Exception as exc:  # noqa: BLE001 - reported in the skip reason
    MODE, WHY = "none", str(exc)
needs_namespaces = pytest.mark.skipif(MODE != "namespaces", reason=f"bubblewrap sandbox unavailable here: {WHY}")
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


SNOOP = """
import glob, os, time
import torch
import torch.nn as nn

OTHER = "__OTHER__"
MINE = os.path.realpath(os.getcwd())
got = []
for path in glob.glob(OTHER + "/**", recursive=True) + glob.glob("/proc/[0-9]*/cwd/kernel.py"):
    if os.path.realpath(path).startswith(MINE):  # its own folder, seen through its own processes
        continue
    try:
        if os.path.isfile(path):
            got.append(f"read {path}: {open(path).read(40)!r}")
        with open(os.path.join(os.path.dirname(path), "planted.txt"), "w") as fh:
            fh.write("planted")
        got.append(f"wrote beside {path}")
    except OSError:
        pass
for pid in range(2, 4096):  # signal any process of another evaluation (same uid or not)
    try:
        if pid != os.getpid():
            os.kill(pid, 0)
            if not os.path.realpath(f"/proc/{pid}/cwd").startswith(MINE):
                got.append(f"could signal {pid}")
    except OSError:
        pass
if got:
    raise RuntimeError("SANDBOX ESCAPE " + " | ".join(got[:5]))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

SLOW = """
import time
import torch
import torch.nn as nn

time.sleep(__SLEEP__)  # while it sleeps, the other evaluation looks for it


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_two_kernels_evaluated_at_once_cannot_see_each_other(tmp_path):
    work = tmp_path / "work"
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(
            run_evaluation,
            problem_source=RELU,
            kernel_source=SLOW.replace("__SLEEP__", "20"),
            device="cpu",
            timeout=180,
            work_root=work,
            options={"quick": True, "keep_workdir": True},
        )
        deadline = time.monotonic() + 60
        while not list(work.glob("eval-*/candidate/kernel.py")) and time.monotonic() < deadline:
            time.sleep(0.2)
        others = list(work.glob("eval-*"))
        assert others, "the first evaluation never started"
        snoop = run_evaluation(
            problem_source=RELU,
            kernel_source=SNOOP.replace("__OTHER__", str(others[0])),
            device="cpu",
            timeout=120,
            work_root=work,
            options={"quick": True},
        )
        first = slow.result()
    assert snoop["status"] == "ok" and snoop["correct"] is True, snoop["error"]
    assert first["status"] == "ok" and first["correct"] is True, first["error"]
    assert snoop["environment"]["candidate_uid"] != first["environment"]["candidate_uid"]
    assert not list(work.rglob("planted.txt"))


HANG_IN_TIMING = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    calls = 0

    def forward(self, x):
        ModelNew.calls += 1
        if ModelNew.calls > 20:  # past the correctness gate (quick mode: 12 calls): hang while being timed
            while True:
                pass
        return torch.relu(x)
"""


def test_a_hang_in_the_timing_phase_ends_the_evaluation_early(tmp_path):
    started = time.monotonic()
    record = run_evaluation(
        problem_source=RELU,
        kernel_source=HANG_IN_TIMING,
        device="cpu",
        timeout=600,  # the outer bound; the hang must end it far sooner
        work_root=tmp_path / "work",
        options={"quick": True, "hang_grace_s": 5.0},
    )
    elapsed = time.monotonic() - started
    assert record["status"] == "timeout" and record["correct"] is False
    assert "hung" in record["error"], record["error"]
    assert elapsed < 90, f"a hung kernel held the evaluation for {elapsed:.0f} s"


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


LINGER = """
import subprocess, sys, time
import torch
import torch.nn as nn

DAEMON = "import os, time; os.fork() and os._exit(0); os.setsid(); time.sleep(600)"  # double fork, own session
subprocess.Popen([sys.executable, "-c", DAEMON, "__MARKER__"])
time.sleep(600)  # the import never ends: the test kills the evaluator meanwhile


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_killing_the_evaluator_leaves_no_kernel_process(tmp_path):
    marker = f"kbv-linger-{uuid.uuid4().hex}"
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(
            run_evaluation,
            problem_source=RELU,
            kernel_source=LINGER.replace("__MARKER__", marker),
            device="cpu",
            timeout=300,
            work_root=tmp_path / "work",
            options={"quick": True},
        )
        deadline = time.monotonic() + 90
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        found = processes_with(marker)
        assert found, "the kernel never started its grandchild"
        pid = found[0]  # up from the kernel's grandchild to the orchestrator (`python -m evaluator.harness ...`)
        while pid > 1:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"evaluator.harness" in cmdline and not any(b"_worker" in part for part in cmdline):
                break
            pid = _parent(pid)
        assert pid > 1, "no orchestrator above the kernel"
        os.kill(pid, 9)
        with contextlib.suppress(Exception):  # the runner reports the dead harness as an infrastructure error
            pending.result(timeout=120)
    deadline = time.monotonic() + 20
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_with(marker), "a process of the kernel outlived its evaluator"


@pytest.mark.gpu
def test_a_hang_in_cuda_timing_ends_early_and_outputs_cross_the_sandbox_on_the_device(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA (benchmarks/sandbox_gpu.py records it on the H200)")
    record = run_evaluation(
        problem_source=RELU,
        kernel_source=HANG_IN_TIMING,
        device="cuda",
        timeout=600,
        work_root=tmp_path / "work",
        options={"quick": True, "hang_grace_s": 5.0},
    )
    assert record["environment"]["output_handover"] == "cuda_fd"
    assert record["status"] == "timeout" and "hung" in record["error"]
