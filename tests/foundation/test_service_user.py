"""The app's processes never run as root (evaluator/service_user.py): started as root, manage.py, the WSGI entry and
a Celery worker become the service user before the app is imported and say so; a worker first starts the
launcher's zygote, the one process that stays root. Run as root here: the real processes, read back from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.service_user import service_identity
from tests.conftest import REPO_ROOT

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="only a process started as root drops to the service user")


def test_the_service_user_is_never_root():
    assert service_identity("auto")[0] != 0
    assert service_identity("1234:5678") == (1234, 5678, "kbv")
    assert service_identity("off") is None
    for value in ("root", "0", "0:0", "no-such-user-kbv"):
        with pytest.raises(ValueError):
            service_identity(value)


def _env(var: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SQLITE_PATH",
                                                             "CELERY_QUEUE_DIR", "DJANGO_SETTINGS_MODULE"}}  # fmt: skip
    env.update(VAR_DIR=str(var), DJANGO_DEBUG="True", PYTHONUNBUFFERED="1")
    env.pop("KBV_SERVICE_USER", None)
    return env


@needs_root
def test_manage_py_started_as_root_runs_as_the_service_user(tmp_path):
    var = tmp_path / "var"  # under a folder only root may enter: the drop opens the way (search only)
    os.chmod(tmp_path, 0o700)
    code = "import os; print('ids', os.getuid(), os.geteuid(), os.getgroups())"
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=REPO_ROOT, env=_env(var),
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    uid = service_identity("auto")[0]
    assert f"ids {uid} {uid} []" in done.stdout
    assert f"started as root; running as uid {uid}" in done.stderr
    assert var.stat().st_uid == uid and (var / "celery").stat().st_uid == uid  # made by the app, as its user


@needs_root
def test_the_drop_keeps_the_parent_death_signal_its_supervisor_armed(tmp_path):
    """Linux clears it on a uid change; `make run`'s supervisor arms it so nothing outlives a SIGKILLed make."""
    read = (
        "import ctypes, os; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); "  # GET
        "print('sig', os.getuid(), v.value)"
    )
    armed = (
        "import ctypes, os, signal, sys; ctypes.CDLL(None).prctl(1, int(signal.SIGTERM), 0, 0, 0); "  # SET
        f"os.execv(sys.executable, [sys.executable, 'manage.py', 'shell', '-c', {read!r}])"
    )
    done = subprocess.run(
        [sys.executable, "-c", armed],
        cwd=REPO_ROOT,
        env=_env(tmp_path / "var"),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert f"sig {service_identity('auto')[0]} {int(signal.SIGTERM)}" in done.stdout, done.stdout + done.stderr


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _root_processes() -> list[int]:
    """Processes of root's on this machine that are this product's (a zygote, a Celery worker, a web server)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                uid = next(x for x in (entry / "status").read_text().splitlines() if x.startswith("Uid:")).split()[2]
            except (OSError, StopIteration):
                continue
            text = b" ".join(_argv(int(entry.name)))
            if uid == "0" and (b"evaluator.harness.sandbox.launcher" in text or b"celery" in text):
                found.append(int(entry.name))
    return found


@needs_root
@pytest.mark.slow  # starts a real Celery worker
def test_a_celery_worker_started_as_root_drops_and_keeps_only_the_launcher_root(tmp_path):
    var = tmp_path / "var"
    log = tmp_path / "worker.log"
    env = _env(var)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO_ROOT, env=env, check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    before = set(_root_processes())
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [str(Path(sys.executable).parent / "celery"), "-A", "config", "worker", "-Q", "eval-cpu", "-c", "1",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and b"ready" not in log.read_bytes() and worker.poll() is None:
            time.sleep(0.5)
        text = log.read_text(errors="replace")
        assert "ready" in text, text[-3000:]
        uid = service_identity("auto")[0]
        assert f"celery worker: started as root; running as uid {uid}" in text
        assert "evaluations go through the root launcher's zygote" in text
        status = dict(line.split(":", 1) for line in Path(f"/proc/{worker.pid}/status").read_text().splitlines())
        assert status["Uid"].split() == [str(uid)] * 4 and int(status["CapEff"], 16) == 0
        # the zygote it started before the drop: the one process of root's that is new, and nothing else of root's
        new = [pid for pid in _root_processes() if pid not in before]
        assert [pid for pid in new if b"evaluator.harness.sandbox.launcher" in _argv(pid)], new
        assert not [pid for pid in new if _ppid(pid) == worker.pid], "a pool process of the worker runs as root"
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)


@needs_root
def test_the_app_takes_its_folders_and_leaves_the_launchers_shares_alone(tmp_path):
    """VAR_DIR and what is in it become the service user's; the harness's shared folders (the compile cache, here)
    only at their top, keeping the orchestrators' group the launcher gave them (else the next evaluation's launcher
    would refuse a folder writable by a group not its own)."""
    from evaluator.service_user import give_folders

    var = tmp_path / "var"
    (var / "celery" / "processed").mkdir(parents=True)
    (var / "celery" / "processed" / "message.msg").write_text("x")
    cache = var / "compile-cache"
    (cache / "entry").mkdir(parents=True)
    os.chown(cache, 0, 299999)
    os.chmod(cache, 0o2770)
    give_folders(4321, 4321, {"VAR_DIR": str(var)})
    assert (var.stat().st_uid, (var / "celery" / "processed" / "message.msg").stat().st_uid) == (4321, 4321)
    assert (cache.stat().st_uid, cache.stat().st_gid) == (4321, 299999)
    assert (cache / "entry").stat().st_uid == 0  # the launcher's to share, not the app's to take
