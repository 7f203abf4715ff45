"""Shared by the sandbox red-team tests (test_sandbox_host.py, test_sandbox_processes.py): the problem every kernel
there solves, and whether bubblewrap's namespaces are available here (those tests skip without them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluator.harness.sandbox.namespaces import choose_mode

HERE = Path(__file__).resolve().parent
RELU = (HERE / "problems" / "relu.py").read_text()

try:
    MODE, WHY = choose_mode(uid=200000 if os.geteuid() == 0 else os.getuid(), gid=200000)
except Exception as exc:  # reported in the skip reason
    MODE, WHY = "none", str(exc)
needs_namespaces = pytest.mark.skipif(MODE != "namespaces", reason=f"bubblewrap sandbox unavailable here: {WHY}")
