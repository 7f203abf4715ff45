"""The kernel build cache: one directory per sha256(source) + torch + CUDA + GPU arch, so re-evaluating a kernel
skips its ~47 s load_inline build. stdlib only.

The build path is stable per key (ninja only reuses objects whose build commands, and so paths, are unchanged). A
manifest of file hashes, written by the orchestrator right after a successful build, is checked on every hit: an
entry whose files changed afterwards (by its own kernel or by another one) is wiped and rebuilt. When the evaluator
runs as root, the candidate worker runs as an unprivileged user (privileges.py) that owns only the entry it is
building, and only until its import is done (the orchestrator takes it back before writing the manifest): the cache
root and every other entry's files are the evaluator's, so a kernel cannot poison them. Only each entry's triton/ stays
the sandbox user's, because Triton compiles at the first call, after the import; there, as everywhere when the
evaluator is not root (all workers are then one Unix user), the manifest detects poisoning rather than preventing it
(the runner is the seam for a real sandbox). Files Triton adds after the manifest make the next check a rebuild.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import IO


def cache_key(*, source: str, torch_version: str, cuda_version: str | None, arch: str) -> str:
    digest = hashlib.sha256()
    for part in (source, torch_version, cuda_version or "cpu", arch):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _manifest(build_dir: Path) -> dict[str, str]:
    files = {}
    for path in sorted(build_dir.rglob("*")):
        if path.is_file() and path.name != "lock":
            files[str(path.relative_to(build_dir))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


class CacheEntry:
    """One cache entry; hold its lock while a candidate builds into it."""

    def __init__(self, root: Path, key: str) -> None:
        self.root = root
        self.key = key
        self.build_dir = root / key / "build"
        self.manifest_path = root / f"{key}.json"
        self._lock_fh: IO[str] | None = None

    def acquire(self, timeout: float) -> bool:
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_fh = open(self.root / f"{self.key}.lock", "w")  # noqa: SIM115 - held until release()
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)

    def release(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    def check_hit(self) -> bool:
        """True when a verified build is there; otherwise start from an empty build directory."""
        try:
            saved = json.loads(self.manifest_path.read_text())
            if saved.get("files") and saved["files"] == _manifest(self.build_dir):
                return True
        except (OSError, ValueError):
            pass
        self.discard()
        self.build_dir.mkdir(parents=True, exist_ok=True)
        return False

    def commit(self, compile_s: float) -> None:
        files = _manifest(self.build_dir)
        tmp = self.manifest_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"files": files, "compile_s": compile_s}))
        tmp.replace(self.manifest_path)

    def discard(self) -> None:
        self.manifest_path.unlink(missing_ok=True)
        shutil.rmtree(self.build_dir, ignore_errors=True)
