"""Who runs as whom while evaluations run: every process of the product's roles (web, Celery worker, the launcher's
zygote and launchers, orchestrators, reference and candidate workers), its uid and capabilities read from
/proc/PID/status (not from what the process says of itself). scripts/gpu_e2e.py samples it during the upload and
writes the table into its record; benchmarks/confine_check.py prints it for one evaluation."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

CAPS = {0: "chown", 1: "dac_override", 5: "kill", 6: "setgid", 7: "setuid", 12: "net_admin", 21: "sys_admin",
        23: "sys_nice", 14: "ipc_lock", 3: "fowner", 19: "sys_ptrace"}  # fmt: skip


def role(argv: list[bytes]) -> str | None:
    """The product role of a command line, or None."""
    if b"evaluator.harness.sandbox.launcher" in argv:
        return "launcher"
    if b"evaluator.harness.workers.reference_worker" in argv:
        return "reference worker"
    if b"evaluator.harness.workers.candidate_worker" in argv:
        return "candidate worker (bwrap)" if argv[0].endswith(b"bwrap") else "candidate worker"
    if b"evaluator.harness" in argv and b"--spec" in argv:
        return "orchestrator"
    text = b" ".join(argv)
    if b"celery" in text and b"worker" in argv:
        return "celery worker"
    if b"runserver" in argv or b"gunicorn" in text:
        return "web"
    return None


def _ours(entry: Path, root: Path) -> bool:
    """Whether a process belongs to this deployment: it works in `root` (an orchestrator, a worker) or was started
    with it as VAR_DIR (the web server, a Celery worker); a launcher counts through the processes it started."""
    try:
        if os.readlink(entry / "cwd").startswith(f"{root}/"):
            return True
        return f"VAR_DIR={root}".encode() in (entry / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def snapshot(root: Path) -> list[dict[str, Any]]:
    """One row per process of a product role that belongs to the deployment whose VAR_DIR (or work root) is `root`,
    and per launcher above one: pid, role, uid (real, effective), capabilities, no_new_privs."""
    rows, launchers = [], set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            found = role(argv)
            if found is None or (found != "launcher" and not _ours(entry, root)):
                continue
            status = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if found in ("orchestrator", "reference worker", "candidate worker (bwrap)"):
            launchers.add(_parent(int(entry.name)))
        effective = int(status["CapEff"].strip(), 16)
        names = [CAPS.get(bit, f"cap{bit}") for bit in range(64) if effective >> bit & 1]
        uids = status["Uid"].split()
        rows.append({
            "pid": int(entry.name),
            "role": found,
            "uid": int(uids[1]),
            "real_uid": int(uids[0]),
            "capabilities": "all" if len(names) > 30 else names,
            "bounding_set": "all" if int(status["CapBnd"].strip(), 16).bit_count() > 30 else
                            int(status["CapBnd"].strip(), 16).bit_count(),
            "no_new_privs": status.get("NoNewPrivs", "").strip() == "1",
        })  # fmt: skip
    launchers |= {_parent(pid) for pid in launchers}  # the zygote above each evaluation's launcher
    rows = [r for r in rows if r["role"] != "launcher" or r["pid"] in launchers]
    return sorted(rows, key=lambda r: (r["role"], r["pid"]))


class Watch(threading.Thread):
    """Samples snapshot() every `every` seconds until stopped; the last row seen of each process (a Celery worker is
    root for the moment before its drop), then one row per (role, uid, capabilities)."""

    def __init__(self, root: Path, every: float = 2.0) -> None:
        super().__init__(daemon=True, name="process-watch")
        self.root = root
        self.every = every
        self.rows: dict[int, dict[str, Any]] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            for row in snapshot(self.root):
                self.rows[row["pid"]] = row
            self._stop_event.wait(self.every)

    def stop(self) -> list[dict[str, Any]]:
        self._stop_event.set()
        self.join(10)
        kinds = {(r["role"], r["uid"], str(r["capabilities"])): r for r in self.rows.values()}
        return sorted(kinds.values(), key=lambda r: (r["role"], r["uid"]))


def table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: who runs as whom."""
    lines = ["| process | uid | capabilities | bounding set | no_new_privs |", "|---|---|---|---|---|"]
    for r in rows:
        caps = r["capabilities"] if isinstance(r["capabilities"], str) else ", ".join(r["capabilities"]) or "none"
        lines.append(f"| {r['role']} | {r['uid']} | {caps} | {r['bounding_set']} | {r['no_new_privs']} |")
    return lines
