"""Which Unix users run an evaluation, and the permissions that go with them. stdlib only.

A kernel is untrusted code. Run as root (CI and the GPU machine) it could write anywhere on the machine (red-team
class C2, tests/redteam/abuse/write_outside_workdir.py). So where the launcher (launcher/) is root, each evaluation
leases a slot of a machine-wide pool (UidLease: an flock in a root-only folder) and runs as two uids of its own:
the kernel as UID_BASE + slot (200000 + slot) and the orchestrator and the reference worker as 300000 + slot (the
launcher's ORCHESTRATOR_UID_BASE), so concurrent evaluations never share a user and nothing that reads the kernel's
words is root.

- `KBV_SANDBOX_USER` names the kernel's user: `auto` (default) is the slot's uid; a user name (65534:65534 when the
  name does not exist) or a numeric `uid[:gid]` is shared by every evaluation; `off` keeps the kernel as root (a
  machine where no other user can open the GPU's device nodes, say; the launcher allows it only to a caller that is
  root itself). Without root there is nothing to drop to: every process runs as the caller's user.
- The workers keep no supplementary groups (the orchestrator keeps only its shared group). The kernel's folders are
  new and its own on its disks (launcher/layout.py); the reference's folder is 0o700, the evaluation's folder 0o711.
- The users must reach their files. Directories above the evaluation's folder are where the caller chose to run
  (pytest's 0o700 temporary dirs, tempfile.mkdtemp): those lacking it get search permission for others (o+x: enter
  by name, never list, never write). The interpreter, its libraries and this repository are the host's
  installation and are never changed by an evaluation: when a user cannot use them, the evaluation stops with an
  infrastructure error naming the directory in the way. `python -m evaluator.harness.sandbox.privileges --open` (run
  by `make install`) adds o+x along those paths once, e.g. on /root when Python lives in /root/.pyenv.

The user is one layer; the namespaces sandbox (namespaces.py: no network, a private view of the file system and of
the processes) is the other, and the one that hides what is world-readable. Without bwrap (mode "uid") the user is
all there is: no network isolation, and everything world-readable stays readable.
"""

from __future__ import annotations

import argparse
import os
import pwd
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_VAR = "KBV_SANDBOX_USER"
DEFAULT_USER = "auto"  # one uid per evaluation, leased from a pool (see UidLease)
FALLBACK_IDENTITY = (65534, 65534)
UID_BASE = 200000  # per-evaluation uids: UID_BASE + slot; no passwd entry needed (the sandbox brings its own)
UID_SLOTS = 4096
REPO_ROOT = Path(__file__).resolve().parents[3]

Identity = tuple[int, int]


def uid_slots_dir() -> Path:
    """Where the per-evaluation uid leases live: one folder for the whole machine (evaluations under different work
    roots must not share a uid either), root's own: /run (`KBV_SANDBOX_UID_DIR` overrides)."""
    named = os.environ.get("KBV_SANDBOX_UID_DIR", "").strip()
    if named:
        return Path(named)
    run = Path("/run")
    if run.is_dir() and os.access(run, os.W_OK):
        return run / "kbv-sandbox-uids"
    return Path(tempfile.gettempdir()) / f"kbv-sandbox-uids-{os.geteuid()}"


def own_slots_dir(path: Path) -> None:
    """Make the machine-wide slots folder (mode 0o700) or check the one there is ours (or root's and shared with a
    group of ours: the launcher's CPU slots for the orchestrators): a folder planted by someone else could hand two
    evaluations the same slot, so it is never trusted."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    shared = info.st_uid == 0 and info.st_gid in os.getgroups() and info.st_mode & 0o072 == 0o070
    if not stat.S_ISDIR(info.st_mode) or not (info.st_uid == os.geteuid() or shared):
        raise RuntimeError(f"{path} is not a folder of this user's: cannot lease slots there")


def lease_first_free(slots_dir: Path, names: list[str]) -> tuple[Any, int] | None:
    """The flock of the first free file among `names` in a machine-wide slots folder (own_slots_dir), tried from a
    point that spreads concurrent evaluations (any free one will do): (the open file, held until it is closed, and
    its index in `names`), or None when every one is held."""
    import fcntl

    own_slots_dir(slots_dir)
    start = os.getpid() % len(names) if names else 0
    for step in range(len(names)):
        index = (start + step) % len(names)
        fh = open(slots_dir / names[index], "w")  # noqa: SIM115 - held until the caller closes it
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        return fh, index
    return None


class UidLease:
    """One uid of the per-evaluation pool, held (an flock on its slot file) for as long as the evaluation runs, so
    two kernels evaluated at once never share a Unix user: neither can read, write or signal the other's files or
    processes. Slot files live in a root-only folder beside the evaluations' work folders."""

    def __init__(self, slots_dir: Path | None = None) -> None:
        self.slots_dir = Path(slots_dir) if slots_dir is not None else uid_slots_dir()
        self._fh: Any = None
        self.identity: Identity | None = None

    def acquire(self) -> Identity:
        got = lease_first_free(self.slots_dir, [f"{slot}.lock" for slot in range(UID_SLOTS)])
        if got is None:
            raise RuntimeError(f"all {UID_SLOTS} sandbox uids are in use")
        self._fh, slot = got
        self.identity = (UID_BASE + slot, UID_BASE + slot)
        return self.identity

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing drops the flock
            self._fh = None


def parse_identity(value: str) -> Identity | None:
    """`off` -> None; `uid[:gid]` -> those numbers (gid defaults to the uid's group, else the uid); a name -> its
    passwd entry; an unknown name -> 65534:65534. Raises ValueError for root and for malformed values."""
    value = value.strip() or DEFAULT_USER
    if value.lower() == "off":
        return None
    head, _, tail = value.partition(":")
    if head.isdigit():
        uid = int(head)
        if tail:
            gid = int(tail)
        else:
            try:
                gid = pwd.getpwuid(uid).pw_gid
            except KeyError:
                gid = uid
        if uid == 0:
            raise ValueError(f"{ENV_VAR}={value!r}: uid 0 is no sandbox (use 'off' to disable the drop)")
        return uid, gid
    if tail or ":" in value:
        raise ValueError(f"{ENV_VAR}={value!r}: expected a user name, uid[:gid] or 'off'")
    try:
        entry = pwd.getpwnam(value)
    except KeyError:
        return FALLBACK_IDENTITY
    if entry.pw_uid == 0:
        raise ValueError(f"{ENV_VAR}={value!r} is root: no sandbox (use 'off' to disable the drop)")
    return entry.pw_uid, entry.pw_gid


def candidate_identity(environ: dict[str, str] | None = None, *, lease: UidLease | None = None) -> Identity | None:
    """(uid, gid) the candidate worker must run as, or None to run it as this process's own user. `auto` (the
    default) takes a uid of its own for this evaluation from `lease` (65534 when no lease is given)."""
    if os.geteuid() != 0:
        return None
    env = os.environ if environ is None else environ
    value = env.get(ENV_VAR, DEFAULT_USER).strip() or DEFAULT_USER
    if value.lower() == "auto":
        return lease.acquire() if lease is not None else FALLBACK_IDENTITY
    return parse_identity(value)


# --- permissions, as the kernel would see them (mode bits; ACLs are not read) ---------------------------------------


def _shift(st: os.stat_result, ident: Identity) -> int:
    """Where `ident`'s permission bits sit in the mode: owner (6), group (3) or others (0); no supplementary groups."""
    if st.st_uid == ident[0]:
        return 6
    return 3 if st.st_gid == ident[1] else 0


def _may(st: os.stat_result, ident: Identity, want: int) -> bool:
    """Whether `ident` has the permission bits `want` (4 r, 2 w, 1 x) on a file."""
    return (st.st_mode >> _shift(st, ident)) & want == want


def _ways(path: Path | str, *, itself: bool = False) -> list[Path]:
    """The directories one passes to reach `path`, as written and with symlinks resolved, from / down (and `path`
    itself when `itself`: a directory to enter too)."""
    written = Path(os.path.abspath(path))
    resolved = Path(os.path.realpath(written))
    found: list[Path] = []
    for way in (written, resolved):
        for step in [*reversed(way.parents), *([way] if itself else [])]:
            if step not in found:
                found.append(step)
    return found


def blocked_at(path: Path | str, ident: Identity, *, itself: bool = False) -> Path | None:
    """The first directory on the way to `path` that `ident` cannot enter (None: all of them are open to it)."""
    for step in _ways(path, itself=itself):
        try:
            if not _may(step.stat(), ident, 1):
                return step
        except OSError:
            return step
    return None


def open_path(
    path: Path | str, ident: Identity | None, *, itself: bool = False, owner: int | None = None
) -> list[Path]:
    """Add search permission (x for others, or for the class `ident` falls in; never r or w) to the directories on
    the way to `path` that `ident` cannot enter and that `owner` owns (default: this process's user; -1: anyone's,
    for a caller that is root itself); returns those it changed (the rest is for `check_runtime` to report)."""
    changed: list[Path] = []
    if ident is None:
        return changed
    for step in _ways(path, itself=itself):
        try:
            st = step.stat()
        except OSError:
            continue
        mine = owner == -1 or st.st_uid == (os.geteuid() if owner is None else owner)
        if stat.S_ISDIR(st.st_mode) and not _may(st, ident, 1) and mine:
            os.chmod(step, stat.S_IMODE(st.st_mode) | (1 << _shift(st, ident)))
            changed.append(step)
    return changed


# --- can the sandbox user run the worker at all? --------------------------------------------------------------------

_PROBE = (  # argv[1]: the worker's own dir, by the absolute path the orchestrator will send it paths under
    "import importlib.util as u, os, sys\n"
    "os.listdir(sys.argv[1])\n"
    "missing = [m for m in ('torch', 'evaluator.harness.workers.candidate_worker') if u.find_spec(m) is None]\n"
    "sys.exit(f'cannot import {missing}' if missing else 0)\n"
)


def check_runtime(
    python: str,
    ident: Identity | None,
    *,
    env: dict[str, str],
    cwd: Path,
    wrap: Callable[[list[str]], list[str]] | None = None,
) -> str | None:
    """None when `ident` can start `python`, reach `cwd` (its own dir) by its path, find torch and this repository's
    harness; else why not.

    The answer comes from a real process (the interpreter as that user, ~50 ms), so that group or ACL rules are judged
    by the kernel. Without it, a candidate worker that cannot even start would look like a kernel that crashed."""
    if ident is None and wrap is None:
        return None
    argv = [python, "-c", _PROBE, str(Path(cwd).resolve())]
    identity: dict[str, Any] = {"user": ident[0], "group": ident[1], "extra_groups": []} if ident is not None else {}
    try:
        done = subprocess.run(
            wrap(argv) if wrap else argv,
            cwd=cwd,
            env=env,
            **identity,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
        )
        if done.returncode == 0:
            return None
        detail = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        why = detail[-1] if detail else f"exit code {done.returncode}"
    except (OSError, subprocess.SubprocessError) as exc:
        why = f"{type(exc).__name__}: {exc}"
    places = [Path(python), Path(sys.prefix), Path(sys.base_prefix), REPO_ROOT, cwd]
    if ident is None:
        return f"the sandbox cannot run the candidate worker with {python}: {why}"
    blocked = next((b for b in (blocked_at(p, ident, itself=p.is_dir()) for p in places) if b is not None), None)
    where = f"; {blocked} is not searchable by uid {ident[0]}" if blocked else ""
    return (
        f"the sandbox user (uid {ident[0]}, gid {ident[1]}) cannot run the candidate worker with {python}: {why}"
        f"{where}. Run `{sys.executable} -m evaluator.harness.sandbox.privileges --open` as root "
        "(adds o+x on the way), "
        f"install Python where that user can read it, or set {ENV_VAR}=off to run kernels as root"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Whether the sandbox user can run the harness's candidate worker.")
    parser.add_argument(
        "--open",
        action="store_true",
        help="add search permission for others (o+x) to directories on the way to this interpreter and repository",
    )
    args = parser.parse_args(argv)
    try:
        ident = candidate_identity()  # for `auto`, a stand-in uid: every pool uid is an "other" to these folders
    except ValueError as exc:
        print(f"sandbox: {exc}")
        return 2
    if ident is None:
        reason = f"{ENV_VAR}=off" if os.geteuid() == 0 else "not running as root"
        print(f"sandbox: candidates run as uid {os.geteuid()} ({reason})")
        return 0
    places = [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), REPO_ROOT]
    if args.open:
        for place in places:
            for changed in open_path(place, ident, itself=place.is_dir()):
                print(f"sandbox: added o+x to {changed} (uid {ident[0]} must reach {place})")
    blocked = [b for b in (blocked_at(p, ident, itself=p.is_dir()) for p in places) if b is not None]
    if blocked:
        print(f"sandbox: uid {ident[0]} cannot enter {blocked[0]}; run with --open as root, or set {ENV_VAR}=off")
        return 1
    chosen = os.environ.get(ENV_VAR, DEFAULT_USER).strip().lower() or DEFAULT_USER
    if chosen == "auto":
        print(f"sandbox: each evaluation's kernel runs as a uid of its own ({UID_BASE} + slot)")
    else:
        print(f"sandbox: candidates run as uid {ident[0]}, gid {ident[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
