"""Test entry to the one settings file: tests run with DEBUG off, like production, so they need a SECRET_KEY.

pytest-django imports settings before any conftest runs, which is why this is not a conftest fixture.
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")

from config.settings import *  # noqa: F403

# Tests that need the kernel sandbox check for it themselves (tests/redteam/test_sandbox_*.py); the rest also run on a
# developer's machine without bubblewrap.
EVALUATOR_REQUIRE_SANDBOX = False

# One process runs the tests: throttle counts may live in local memory (each test starts with them cleared).
# tests/pipeline/test_identity.py checks the shared database cache that production uses.
CACHES = {**CACHES, "throttle": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}}  # noqa: F405

# The harness's folders for evaluations this test process runs itself: a folder of its own, never the repository's
# var/. `manage.py` run as root hands var/ to the service user before it imports the app (evaluator/service_user.py;
# `make test` runs `manage.py check` first), and the launcher runs a root caller's evaluation only in folders of
# root's own.
_HARNESS_DIR = Path(tempfile.mkdtemp(prefix="kbv-test-harness-"))
atexit.register(shutil.rmtree, _HARNESS_DIR, True)
EVALUATOR_WORK_DIR = _HARNESS_DIR / "work"
EVALUATOR_COMPILE_CACHE_DIR = _HARNESS_DIR / "compile-cache"
EVALUATOR_GPU_LOCK_DIR = _HARNESS_DIR / "gpu-locks"
