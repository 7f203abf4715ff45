"""The candidate's sandbox: Linux namespaces made by bubblewrap (`bwrap`), around the only process that imports an
uploaded kernel. stdlib only.

What the kernel sees (a mount namespace built from nothing): the system's programs and libraries and the harness's
Python read-only (/usr, /lib*, /bin, /sbin, the interpreter's prefixes, `evaluator/harness` of this repository), its
own work folder read-write (the only host folder it can write), a fixed build folder for its extensions (inside its
work folder), private tmpfs `/tmp`, `/var/tmp` and `/dev/shm` of bounded size, a minimal `/dev` (plus the GPU's
device nodes), a `/proc` of its own PID namespace (it sees only its own processes), and nothing else: not `var/`,
not the database, not the rest of the repository, not other evaluations' folders, not `/root` or `/home`. It has no
network at all (a network namespace with only its own loopback) and its own IPC and UTS namespaces.

bwrap runs unprivileged, as the evaluation's own Unix user (privileges.py hands out one uid per evaluation when the
evaluator is root), inside a user namespace of its own, so the kernel holds no capability on the host; bwrap sets
no_new_privs (set-uid programs do not raise it). When the evaluator process dies, bwrap dies with it
(--die-with-parent) and the kernel's whole PID namespace goes with it: no process outlives the evaluation, and the
tmpfs folders vanish with the mount namespace.

Modes (record's `environment.sandbox`): "namespaces" (this), "uid" (no bwrap, but root: the old unprivileged-user
drop), "none" (neither). `KBV_SANDBOX` picks: "auto" (default: namespaces when bwrap works here), "namespaces",
"uid", "none". `KBV_REQUIRE_SANDBOX=True` (the Django setting EVALUATOR_REQUIRE_SANDBOX, on unless DEBUG) turns a
missing bwrap into an infrastructure error instead of a weaker mode. `KBV_BWRAP` names the binary (default: `bwrap`
on PATH).

Not covered (README, "What the sandbox guarantees"): system calls are not filtered beyond what the namespaces and
the unprivileged user deny (no seccomp profile), and the GPU is shared hardware (timing and memory side channels).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.harness.sandbox.disk import TMP_FOLDERS

MODE_VAR = "KBV_SANDBOX"
REQUIRE_VAR = "KBV_REQUIRE_SANDBOX"
BWRAP_VAR = "KBV_BWRAP"
MODES = ("auto", "namespaces", "uid", "none")
REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_DIR = "/kbv-build"  # the kernel's extension build folder inside the sandbox: one path for every evaluation,
# so a build copied from the compile cache is up to date for ninja (its commands name this path)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "os-release", "nsswitch.conf")


class SandboxUnavailable(Exception):
    """The namespaces sandbox was required but cannot run here."""


def bwrap_path(environ: dict[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    named = env.get(BWRAP_VAR, "").strip()
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("bwrap")


def requested_mode(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    mode = env.get(MODE_VAR, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"{MODE_VAR}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


def required(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(REQUIRE_VAR, "False").strip().lower() == "true"


@functools.cache
def python_paths(python: str, uid: int | None = None, gid: int | None = None) -> tuple[str, ...]:
    """The folders an interpreter needs to start and import torch: its prefixes and every sys.path entry (never the
    repository itself: a venv inside it is bound alone), asked of that interpreter once per process, as `uid` (the
    kernel's: the launcher, root, runs nothing as root) and read back one per line."""
    probe = (
        "import sys, sysconfig\n"
        "paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}\n"
        "paths |= {sysconfig.get_paths()[k] for k in ('stdlib', 'platstdlib', 'purelib', 'platlib')}\n"
        "print('\\n'.join(sorted(p for p in paths if p and '\\n' not in p)))\n"
    )
    identity: dict[str, Any] = {"user": uid, "group": gid, "extra_groups": []} if uid is not None else {}
    out = subprocess.run(
        [python, "-I", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin"},
        cwd="/",
        **identity,
    ).stdout
    found = {os.path.realpath(python)}
    for entry in out.splitlines():
        for path in {entry, os.path.realpath(entry)}:  # a venv's own path and the installation it links to
            if os.path.isdir(path) and os.path.realpath(path) != str(REPO_ROOT):  # never the whole repository
                found.add(os.path.abspath(path))
    if not os.path.isabs(python) or os.path.dirname(python) not in found:
        found.add(os.path.dirname(os.path.abspath(python)))  # the interpreter as the worker is started: by its path
    # keep only the outermost folders (a venv's site-packages lies inside its prefix)
    ordered = sorted(found, key=len)
    kept: list[str] = []
    for path in ordered:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return tuple(kept)


@dataclass
class Plan:
    """One candidate worker's sandbox."""

    bwrap: str
    python: str
    private_dir: Path  # read-write, at the same path inside (paths in messages need no translation)
    build_dir: Path  # host folder bound read-write at BUILD_DIR
    etc_dir: Path  # host folder with this sandbox's passwd and group files (read-only inside)
    cuda: bool
    handoff_dir: Path | None = None  # the orchestrator's folder for files the kernel reads, never writes
    io_dir: Path | None = None  # outputs on their way to the reference: read-write, at the same path inside
    tmp_dir: Path | None = None  # the kernel's tmp disk (disk.py): its tmp/, var-tmp/, shm/ bound at /tmp, ...
    tmp_bytes: int = 1 << 30  # without a tmp disk: the size of each of bwrap's own tmpfs there
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)
    unprivileged: bool = True  # add --unshare-user (bwrap is run as a non-root user)

    def etc_files(self) -> dict[str, str]:
        """A passwd and group naming only the sandbox's user (some libraries look the current user up)."""
        return {
            "passwd": f"root:x:0:0::/:/usr/sbin/nologin\nkernel:x:{self.uid}:{self.gid}::{self.private_dir}:"
            "/usr/sbin/nologin\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n",
            "group": f"root:x:0:\nkernel:x:{self.gid}:\nnogroup:x:65534:\n",
        }

    def write_etc(self) -> None:
        """etc_files into etc_dir (a folder of ours: the launcher writes them through a descriptor instead)."""
        self.etc_dir.mkdir(parents=True, exist_ok=True)
        for name, text in self.etc_files().items():
            (self.etc_dir / name).write_text(text)
            os.chmod(self.etc_dir / name, 0o644)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The bwrap command line that runs `argv` in this sandbox. bwrap mounts in the order given, so the private
        tmpfs folders come first and every host folder is bound after them: a checkout (its venv, its work folder)
        under /tmp, /var/tmp or /dev/shm stays visible instead of being hidden by the tmpfs."""
        args = _namespaces_and_system(self.bwrap, self.unprivileged, self.uid, self.gid)
        args += ["--dev", "/dev", "--proc", "/proc"]
        for name, path in zip(TMP_FOLDERS, ("/tmp", "/var/tmp", "/dev/shm"), strict=True):
            if self.tmp_dir is not None:  # on the kernel's tmp disk: capped in bytes and inodes
                args += ["--bind", str(self.tmp_dir / name), path]
            else:
                args += ["--size", str(self.tmp_bytes), "--perms", "1777", "--tmpfs", path]
        for name in ETC_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += ["--ro-bind", str(self.etc_dir / "passwd"), "/etc/passwd"]
        args += ["--ro-bind", str(self.etc_dir / "group"), "/etc/group"]
        for path in python_paths(self.python, *((self.uid, self.gid) if os.geteuid() == 0 else ())):
            args += ["--ro-bind", path, path]
        harness = REPO_ROOT / "evaluator"
        args += ["--ro-bind", str(harness / "__init__.py"), str(harness / "__init__.py")]
        args += ["--ro-bind", str(harness / "harness"), str(harness / "harness")]
        args += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
        if self.cuda:  # the GPU's device nodes and what the driver reads to enumerate it (not /sys/class: the host's
            # network interfaces are listed there)
            for node in sorted(glob.glob("/dev/nvidia*")):
                args += ["--dev-bind", node, node]
            for path in ("/sys/devices", "/sys/bus", "/sys/module", "/proc/driver/nvidia"):
                args += ["--ro-bind-try", path, path]
        args += ["--bind", str(self.private_dir), str(self.private_dir)]
        if self.io_dir is not None:
            args += ["--bind", str(self.io_dir), str(self.io_dir)]
        if self.handoff_dir is not None:
            args += ["--ro-bind", str(self.handoff_dir), str(self.handoff_dir)]
        args += ["--bind", str(self.build_dir), BUILD_DIR]
        args += ["--remount-ro", "/"]  # the sandbox's own root (mount points bwrap made) is not a place to write
        args += ["--chdir", str(self.private_dir), "--"]
        return [*args, *argv]


def _namespaces_and_system(bwrap: str, unprivileged: bool, uid: int, gid: int) -> list[str]:
    """The start of every bwrap command line here: the sandbox's namespaces, then the system's programs and
    libraries read-only (the real sandbox and the probe of whether bwrap works share it)."""
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    args += ["--unshare-cgroup-try", "--hostname", "kbv-sandbox"]
    if unprivileged:
        args += ["--unshare-user", "--uid", str(uid), "--gid", str(gid)]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


@functools.cache
def _works(bwrap: str, unprivileged: bool, uid: int, gid: int) -> str | None:
    """None when this bwrap can build the sandbox's namespaces here, else why not (asked once per process)."""
    args = _namespaces_and_system(bwrap, unprivileged, uid, gid)
    args += ["--proc", "/proc", "--dev", "/dev", "--size", "1048576", "--tmpfs", "/tmp", "--", "true"]
    identity: dict[str, Any] = {"user": uid, "group": gid, "extra_groups": []} if os.geteuid() == 0 and uid != 0 else {}
    try:
        done = subprocess.run(args, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, **identity)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode:
        return (done.stderr or done.stdout).decode(errors="replace").strip()[-300:] or f"exit {done.returncode}"
    return None


def choose_mode(*, uid: int, gid: int, environ: dict[str, str] | None = None) -> tuple[str, str | None]:
    """(mode, reason the stronger mode was not used). Raises SandboxUnavailable when the namespaces sandbox is asked
    for (KBV_SANDBOX=namespaces, or required) and cannot run; ValueError for a bad KBV_SANDBOX."""
    mode = requested_mode(environ)
    must = required(environ) or mode == "namespaces"
    if mode in ("auto", "namespaces"):
        bwrap = bwrap_path(environ)
        why = "bubblewrap (bwrap) is not installed" if bwrap is None else _works(bwrap, True, uid, gid)
        if why is None:
            return "namespaces", None
        if must:
            raise SandboxUnavailable(
                f"the kernel sandbox cannot run: {why}. Install bubblewrap (Debian/Ubuntu: apt-get install "
                f"bubblewrap; or point {BWRAP_VAR} at a bwrap binary) on a kernel that allows unprivileged user "
                f"namespaces, or set EVALUATOR_REQUIRE_SANDBOX=False to evaluate with a weaker isolation"
            )
        fallback = "uid" if os.geteuid() == 0 else "none"
        return fallback, why
    if must:
        raise SandboxUnavailable(f"{MODE_VAR}={mode} while the namespaces sandbox is required")
    return mode, f"{MODE_VAR}={mode}"


def probe_worker(python: str, work_root: Path) -> str | None:
    """Start `python` through the real sandbox, as a kernel's worker would be (its user, its folders under
    `work_root`, the harness and torch imported): None when it works, else why not. `make install` runs it, so a
    layout the sandbox cannot serve fails there, not on the first upload."""
    import tempfile

    from evaluator.harness.environ import worker_env
    from evaluator.harness.sandbox.privileges import UID_BASE, check_runtime, open_path

    root = os.geteuid() == 0
    uid, gid = (UID_BASE, UID_BASE) if root else (os.getuid(), os.getgid())
    work_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sandbox-probe-", dir=work_root))
    try:
        private, build = work / "candidate", work / "build"
        ident = (uid, gid) if root else None
        for folder in (private, private / "tmp", build):
            folder.mkdir()
            if ident is not None:
                os.chown(folder, *ident)
        if ident is not None:
            open_path(work, ident)
            os.chmod(work, 0o711)
        plan = Plan(
            bwrap=bwrap_path() or "bwrap",
            python=python,
            private_dir=private,
            build_dir=build,
            etc_dir=work / "sandbox-etc",
            cuda=False,
            uid=uid,
            gid=gid,
        )
        plan.write_etc()
        return check_runtime(python, ident, env=worker_env(private_dir=private), cwd=private, wrap=plan.wrap)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":  # `python -m evaluator.harness.sandbox.namespaces`: which sandbox this machine gives kernels
    uid = 200000 if os.geteuid() == 0 else os.getuid()
    try:
        chosen, reason = choose_mode(uid=uid, gid=uid if os.geteuid() == 0 else os.getgid())
    except (SandboxUnavailable, ValueError) as exc:
        print(f"sandbox: {exc}")
        sys.exit(1)
    if chosen == "namespaces":  # the real interpreter, through the real sandbox, under the real work folder
        work_root = Path(os.environ.get("EVALUATOR_WORK_DIR") or REPO_ROOT / "var" / "work")
        why = probe_worker(os.environ.get("EVALUATOR_PYTHON") or sys.executable, work_root)
        if why is not None:
            print(
                f"sandbox: namespaces cannot start this checkout's worker ({why}). Move the checkout out of a "
                f"folder the sandbox hides, or run "
                f"`{sys.executable} -m evaluator.harness.sandbox.privileges --open` as root"
            )
            sys.exit(1)
    print(f"sandbox: {chosen}" + (f" ({reason})" if reason else ""))
