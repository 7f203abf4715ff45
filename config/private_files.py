"""Files of the app's own that no other Unix user may read: the SQLite database (with its WAL and shared-memory
files) and the embedded broker's folder. VAR_DIR itself is 0700 (settings.private_folder), but the evaluator may
have to let a kernel's uid pass through it to reach its own work folder (x without r), so each file must be
private by its own mode too: defence in depth behind the kernel's sandbox (evaluator/harness/sandbox/namespaces.py)."""

from __future__ import annotations

import contextlib
import os
from typing import Any


def make_sqlite_private(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created handler: the database file and its companions become 0600 (SQLite gives the -wal and -shm
    files the database's mode, so they follow once the database is private)."""
    if connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    for path in (name, f"{name}-wal", f"{name}-shm", f"{name}-journal"):
        with contextlib.suppress(OSError):
            if os.stat(path).st_uid == os.geteuid():
                os.chmod(path, 0o600)
