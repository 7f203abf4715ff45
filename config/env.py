"""Helpers of config/settings.py: reading the environment strictly, private folders, and the management commands
that may run without a SECRET_KEY. Standard library and Django's exception only, so settings can import it first."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def envbool(name: str, default: str = "False") -> bool:
    """Strict boolean: only "True"/"False" (any case), so a typo fails loudly instead of meaning False."""
    value = os.getenv(name, default).strip().lower()
    if value not in {"true", "false"}:
        raise ImproperlyConfigured(f"{name} must be True or False, not {value!r}")
    return value == "true"


def envint(name: str, default: int) -> int:
    try:
        return int(os.getenv(name, str(default)))
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer") from exc


def private_folder(path: Path) -> Path:
    """Create `path` for this user only (0700; an existing one of ours is tightened to that, keeping o+x where the
    evaluator granted it so that a kernel's uid can reach its own work folder below, never list or read)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid == os.geteuid():
        path.chmod(0o700 | (info.st_mode & 0o001))
    return path


# Management commands that serve nothing and sign nothing that outlives their process (README: "Evaluating one
# kernel by hand", creating a user, migrating). Without a SECRET_KEY they get a random key of their own, so a
# newcomer's shell works; the web server (runserver, any WSGI/ASGI server) and Celery workers still refuse to start.
KEYLESS_COMMANDS = frozenset(
    {
        "audit_kernel",
        "changepassword",
        "check",
        "collectstatic",
        "createcachetable",
        "createsuperuser",
        "create_api_token",
        "evaluate_kernel",
        "export_dataset",
        "help",
        "import_baselines",
        "import_hack_flags",
        "import_problems",
        "load_demo",
        "makemigrations",
        "migrate",
        "reap_evaluations",
        "rerun_champions",
        "reproduce",
        "reveal_seeds",
        "seed_demo_results",
        "showmigrations",
        "spectacular",
    }
)


def keyless_command(argv: list[str]) -> bool:
    """`manage.py <command>` for one of KEYLESS_COMMANDS."""
    return len(argv) > 1 and Path(argv[0]).name == "manage.py" and argv[1] in KEYLESS_COMMANDS
