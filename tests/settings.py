"""Test entry to the one settings file: tests run with DEBUG off, like production, so they need a SECRET_KEY.

pytest-django imports settings before any conftest runs, which is why this is not a conftest fixture.
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")

from config.settings import *  # noqa: E402, F403
