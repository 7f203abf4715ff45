"""Test entry to the one settings file: tests run with DEBUG off, like production, so they need a SECRET_KEY.

pytest-django imports settings before any conftest runs, which is why this is not a conftest fixture.
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")

from config.settings import *  # noqa: F403

# Tests that need the kernel sandbox check for it themselves (tests/redteam/test_sandbox_*.py); the rest also run on a
# developer's machine without bubblewrap.
EVALUATOR_REQUIRE_SANDBOX = False

# One process runs the tests: throttle counts may live in local memory (each test starts with them cleared).
# tests/pipeline/test_identity.py checks the shared database cache that production uses.
CACHES = {**CACHES, "throttle": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}}  # noqa: F405
