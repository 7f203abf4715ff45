"""The app's processes (the web server, the Celery workers, manage.py) never run as root. Started as root, as on the
GPU machine, each becomes the service user before it imports the app, and says so on stderr; one that evaluates
kernels (a Celery worker, `manage.py evaluate_kernel` or `reproduce`) first starts the launcher's zygote, which stays
root and is the only process of the deployment that does (evaluator/harness/sandbox/launcher/): it hands the
worker the zygote's socket (KBV_ZYGOTE_FD) and nothing else of root's.

`KBV_SERVICE_USER` picks the user: `auto` (the default) is the passwd entry `kbv` where there is one, else uid and
gid 199999 (no passwd entry needed); a name or `uid[:gid]`; `off` stays root (and says so). Before the drop the
app's own folders become the service user's (VAR_DIR and the folders the settings' variables name; the harness's
work, cache and lock folders only at their top: the launcher shares what is inside), and the way to them, to this
repository and to the interpreter gets search permission for it (never read or write), as `make install` does for
the kernels' uids. stdlib only, no Django: it runs before the app is imported.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from evaluator.harness.sandbox.beneath import open_dir, open_trusted_dir
from evaluator.harness.sandbox.launching import ZYGOTE_VAR, start_zygote
from evaluator.harness.sandbox.privileges import open_path
from evaluator.harness.sandbox.trees import walk

ENV_VAR = "KBV_SERVICE_USER"
DEFAULT_NAME = "kbv"
FALLBACK_ID = 199999
REPO_ROOT = Path(__file__).resolve().parent.parent
HARNESS_FOLDERS = ("EVALUATOR_WORK_DIR", "EVALUATOR_COMPILE_CACHE_DIR", "EVALUATOR_GPU_LOCK_DIR")
_zygote: object = None  # the zygote's socket, held for the life of the process
PR_SET_PDEATHSIG, PR_GET_PDEATHSIG = 1, 2  # linux/prctl.h


def service_identity(value: str) -> tuple[int, int, str] | None:
    """(uid, gid, name) of KBV_SERVICE_USER's value; None for `off`. ValueError for root or a malformed value."""
    value = value.strip() or "auto"
    if value.lower() == "off":
        return None
    if value.lower() == "auto":
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(DEFAULT_NAME)
            return entry.pw_uid, entry.pw_gid, entry.pw_name
        return FALLBACK_ID, FALLBACK_ID, DEFAULT_NAME
    head, _, tail = value.partition(":")
    if head.isdigit() and (not tail or tail.isdigit()):
        uid, gid = int(head), int(tail or head)
        name = DEFAULT_NAME
    else:
        try:
            entry = pwd.getpwnam(value)
        except KeyError as exc:
            raise ValueError(f"{ENV_VAR}={value!r}: no such user") from exc
        uid, gid, name = entry.pw_uid, entry.pw_gid, entry.pw_name
    if uid == 0:
        raise ValueError(f"{ENV_VAR}={value!r} is root: use 'off' to stay root")
    return uid, gid, name


def app_folders(environ: dict[str, str]) -> tuple[list[Path], list[Path]]:
    """(folders the app owns whole, folders it owns only at the top): VAR_DIR and what the settings put elsewhere."""
    var = Path(environ.get("VAR_DIR") or REPO_ROOT / "var")
    whole = [var]
    if environ.get("CELERY_QUEUE_DIR"):
        whole.append(Path(environ["CELERY_QUEUE_DIR"]))
    if environ.get("SQLITE_PATH"):
        whole.append(Path(environ["SQLITE_PATH"]).parent)
    tops = [Path(environ[name]) if environ.get(name) else var / default
            for name, default in zip(HARNESS_FOLDERS, ("work", "compile-cache", "gpu-locks"), strict=True)]  # fmt: skip
    return whole, tops


def give_folders(uid: int, gid: int, environ: dict[str, str]) -> None:
    """The app's folders made the service user's (see app_folders), and the way to them searchable by it. The
    harness's folders are left alone below their top (the launcher shares their insides by group); nothing here
    follows a link (lchown through the walk's descriptors) and the walk is bounded (trees.walk)."""
    whole, tops = app_folders(environ)
    for folder in [*whole, *tops]:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # a harness folder keeps its group: the launcher gave it the orchestrators' (launcher/layout.share_folder)
        os.chown(folder, uid, -1 if folder in tops else gid, follow_symlinks=False)
    for folder in whole:
        with open_trusted_dir(folder) as top:
            for name in os.listdir(top):
                if folder / name in tops:
                    continue
                os.chown(name, uid, gid, dir_fd=top, follow_symlinks=False)
                # a file, a link, or a folder too large to walk: its top only
                with contextlib.suppress(OSError), open_dir(top, name) as sub:
                    for entry in walk(sub):
                        if (entry.info.st_uid, entry.info.st_gid) != (uid, gid):
                            os.chown(entry.name, uid, gid, dir_fd=entry.dir_fd, follow_symlinks=False)
    for place in [*whole, *tops, REPO_ROOT, Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix)]:
        open_path(place, (uid, gid), itself=place.is_dir())


def drop_privileges(program: str, *, launcher: bool = False) -> None:
    """Become the service user if this process is root (see the module); with `launcher`, start the zygote first.
    Call before anything of the app is imported."""
    global _zygote
    if os.geteuid() != 0:
        return
    try:
        identity = service_identity(os.environ.get(ENV_VAR, "auto"))
    except ValueError as exc:
        sys.exit(f"{program}: {exc}")
    if identity is None:
        print(f"{program}: {ENV_VAR}=off: running as root (the app is meant to run as a service user)", file=sys.stderr)
        return
    uid, gid, name = identity
    give_folders(uid, gid, dict(os.environ))
    held = ""
    if launcher:
        zygote = start_zygote()  # root: the one privileged process; ours holds only its socket (pool processes fork)
        os.environ[ZYGOTE_VAR] = str(zygote.fileno())
        _zygote = zygote
        held = "; evaluations go through the root launcher's zygote"
    with _parent_death_signal_kept():
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    os.environ.update(USER=name, LOGNAME=name, HOME=str(app_folders(dict(os.environ))[0][0]))
    print(f"{program}: started as root; running as uid {uid} ({name}), gid {gid}{held}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _parent_death_signal_kept() -> Iterator[None]:
    """Linux clears a process's parent-death signal when its uid or gid changes, so a web server or worker that its
    supervisor armed to die with it (scripts/run_all.py) would outlive a SIGKILLed `make run` once it dropped root.
    Re-arm it after the change, and act on it at once if the parent died in between."""
    if not sys.platform.startswith("linux"):
        yield
        return
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    armed, parent = ctypes.c_int(0), os.getppid()
    prctl(PR_GET_PDEATHSIG, ctypes.byref(armed), 0, 0, 0)
    yield
    if armed.value:
        prctl(PR_SET_PDEATHSIG, armed.value, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.Signals(armed.value))


def is_celery_program(argv: list[str]) -> tuple[bool, bool]:
    """(this process is the `celery` program, it is a worker): what config/celery.py asks before the app loads."""
    program = Path(argv[0]) if argv else Path()
    celery = program.name == "celery" or program.parts[-2:] == ("celery", "__main__.py")
    return celery, celery and "worker" in argv[1:]
