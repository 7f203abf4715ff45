"""Orphans: evaluations whose caller died (kill -9 of a Celery worker).

An evaluation's launcher (evaluator/harness/sandbox/launcher/) holds a life socket to its caller: when the caller
dies, the launcher kills and reaps everything of the evaluation and removes its own folders. What is left is the
caller's: each work folder names its owner (host, pid and start time of the caller, the launcher's process group) in
harness/owner.json, which `orphans_remove` (the reaper, and every worker at start) uses to kill what it may and
remove the folder, without recursion and without following a link.

Part of the runner (stdlib only, no Django); `orphans_remove` is also the reaper's and a starting worker's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

from evaluator.harness.sandbox.beneath import open_trusted_dir, remove_tree

OWNER_FILE = "owner.json"


def start_time(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (with its pid, an identity that survives pid reuse)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def _alive(pid: Any, start: Any) -> bool:
    return isinstance(pid, int) and pid > 0 and start is not None and start_time(pid) == start


def write_owner(work: Path, **fields: Any) -> None:
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "start": start_time(os.getpid())} | fields
    path = work / "harness" / OWNER_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(owner))
    os.replace(tmp, path)


def _processes_under(folder: Path) -> list[int]:
    """Pids whose working directory lies in `folder` (the harness and its workers run inside their work folder)."""
    pids = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cwd = os.readlink(entry / "cwd")
            if cwd == str(folder) or cwd.startswith(f"{folder}/"):
                pids.append(int(entry.name))
    return pids


def orphans_remove(work_root: Path) -> list[str]:
    """Kill the processes of, and remove, every work folder on this host whose caller is no longer alive.

    Safe to call at any time: a folder whose caller lives (or that has no owner file, e.g. one kept on purpose) is
    left alone. Returns the folders removed.
    """
    removed = []
    host = socket.gethostname()
    for folder in sorted(Path(work_root).glob("eval-*")) if Path(work_root).is_dir() else []:
        try:
            owner = json.loads((folder / "harness" / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(owner, dict) or owner.get("host") != host or _alive(owner.get("pid"), owner.get("start")):
            continue
        if _alive(owner.get("pgid"), owner.get("pgid_start")):
            kill_group(owner["pgid"])
        for pid in _processes_under(folder):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        remove_work(folder)
        if not folder.exists():
            removed.append(folder.name)
    return removed


def remove_work(work: Path) -> None:
    """Remove an evaluation's folder without recursion and without following a link (beneath.remove_tree): a
    kernel's tree may be in it."""
    with contextlib.suppress(OSError), open_trusted_dir(work.parent) as parent:
        remove_tree(parent, work.name)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
