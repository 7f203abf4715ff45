"""Per-worker control groups: the memory and process limits count every process the kernel starts, including the
ones that leave its process group or session (setsid, double fork). stdlib only.

A worker process is moved into its own cgroup by its child side before it runs anything (`enter` is called between
fork and exec, while the child is still the evaluator's user), so nothing it starts can be outside it. cgroup v2
(one `memory` + `pids` hierarchy) and v1 (separate `memory` and `pids` hierarchies) are both handled; where neither
lets us make a group (no delegation, a read-only /sys/fs/cgroup, not root), `make` returns None and a reason, the
record says so (`environment.limits.cgroup`), and the watchdog counts the worker's process tree and its uid instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "kbv-evaluations"


def _is_v2(path: Path) -> bool:
    return (path / "cgroup.controllers").is_file()


def _v2_root() -> Path | None:
    for candidate in (ROOT, ROOT / "unified"):
        if _is_v2(candidate):
            controllers = (candidate / "cgroup.controllers").read_text().split()
            if "memory" in controllers:
                return candidate
    return None


class Cgroup:
    """One worker's cgroup (one folder per hierarchy it uses)."""

    def __init__(self, folders: list[Path], version: int) -> None:
        self.folders = folders
        self.version = version
        self._enter_fds: list[int] = []

    @classmethod
    def make(cls, name: str, *, memory_bytes: int, pids: int) -> tuple[Cgroup | None, str]:
        """A new cgroup with these limits, or (None, why not)."""
        if os.geteuid() != 0:
            return None, "not root: no cgroup of our own (the watchdog counts the worker's processes)"
        try:
            root = _v2_root()
            if root is not None:
                return cls._make_v2(root, name, memory_bytes, pids), "cgroup v2"
            memory, pid_root = ROOT / "memory", ROOT / "pids"
            if (memory / "memory.limit_in_bytes").exists():
                return cls._make_v1(memory, pid_root, name, memory_bytes, pids), "cgroup v1"
            return None, "no memory cgroup controller mounted"
        except OSError as exc:
            return None, f"cgroup not delegated here ({exc.strerror or exc}): the watchdog counts processes instead"

    @staticmethod
    def sweep(parent: Path) -> None:
        """Remove the empty groups of evaluations whose orchestrator is gone (one killed before it cleaned up)."""
        with contextlib.suppress(OSError):
            for folder in parent.iterdir():
                owner = folder.name.split("-", 1)[0]
                if folder.is_dir() and owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                    with contextlib.suppress(OSError):
                        folder.rmdir()  # refused while a process is still in it

    @classmethod
    def _make_v2(cls, root: Path, name: str, memory_bytes: int, pids: int) -> Cgroup:
        parent = root / PARENT
        parent.mkdir(exist_ok=True)
        cls.sweep(parent)
        wanted = [c for c in ("memory", "pids") if c in (root / "cgroup.controllers").read_text().split()]
        with contextlib.suppress(OSError):
            (root / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        folder = parent / name
        folder.mkdir()
        (folder / "memory.max").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):
            (folder / "memory.swap.max").write_text("0")
        if "pids" in wanted:
            (folder / "pids.max").write_text(str(pids))
        return cls([folder], 2)

    @classmethod
    def _make_v1(cls, memory: Path, pid_root: Path, name: str, memory_bytes: int, pids: int) -> Cgroup:
        folders = []
        mem = memory / PARENT / name
        mem.mkdir(parents=True)
        cls.sweep(memory / PARENT)
        cls.sweep(pid_root / PARENT)
        folders.append(mem)
        (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # swap accounting may be off
            (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        if (pid_root / "pids.max").exists() or pid_root.is_dir():
            with contextlib.suppress(OSError):
                pid_folder = pid_root / PARENT / name
                pid_folder.mkdir(parents=True)
                (pid_folder / "pids.max").write_text(str(pids))
                folders.append(pid_folder)
        return cls(folders, 1)

    def open_for_child(self) -> None:
        """Open each hierarchy's cgroup.procs before the fork: the child only writes to them (no allocation)."""
        self._enter_fds = [os.open(str(f / "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for f in self.folders]

    def enter(self) -> None:
        """In the child between fork and exec: move this process into the group ("0": the writer itself)."""
        for fd in self._enter_fds:
            os.write(fd, b"0")

    def close_for_child(self) -> None:
        for fd in self._enter_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._enter_fds = []

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.folders[0] / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def memory_bytes(self) -> int:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        try:
            return int((self.folders[0] / name).read_text())
        except (OSError, ValueError):
            return 0

    def oom_killed(self) -> bool:
        """Whether the kernel's memory limit killed a process of the group."""
        try:
            if self.version == 2:
                events = (self.folders[0] / "memory.events").read_text()
            else:
                events = (self.folders[0] / "memory.oom_control").read_text()
                if "oom_kill " not in events:  # older kernels: the failure count of the limit
                    return int((self.folders[0] / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False
        for line in events.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def kill(self) -> None:
        """SIGKILL every process of the group, until none is left (a fork racing the kill is caught next round)."""
        if self.version == 2 and (self.folders[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.folders[0] / "cgroup.kill").write_text("1")
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> None:
        self.close_for_child()
        self.kill()
        for folder in self.folders:
            for _ in range(50):  # a killed process leaves the group when it is reaped
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
