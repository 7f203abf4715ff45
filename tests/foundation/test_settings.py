"""The env-driven settings switches, checked in fresh interpreters (settings are read once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO_ROOT

PRINT = (
    "import json, django; from django.conf import settings; django.setup(); "
    "print(json.dumps({'engine': settings.DATABASES['default']['ENGINE'], 'name': str(settings.DATABASES['default']"
    "['NAME']), 'broker': settings.CELERY_BROKER_URL, 'debug': settings.DEBUG, "
    "'fs': getattr(settings, 'CELERY_BROKER_TRANSPORT_OPTIONS', {}).get('data_folder_in')}))"
)


def settings_with(env: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_DEBUG"}
    }
    base.update({"DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path)}, **env)
    return subprocess.run(
        [sys.executable, "-c", PRINT], cwd=REPO_ROOT, env=base, capture_output=True, text=True, timeout=60
    )


def test_defaults_need_no_server(tmp_path):
    out = json.loads(settings_with({"SECRET_KEY": "k"}, tmp_path).stdout)
    assert out["engine"] == "django.db.backends.sqlite3"
    assert out["name"].startswith(str(tmp_path))
    assert out["broker"] == "filesystem://"
    assert out["fs"] == str(tmp_path / "celery")
    assert (tmp_path / "celery" / "processed").is_dir()  # kombu needs the folders to exist
    assert out["debug"] is False


def test_database_url_switches_to_postgresql(tmp_path):
    out = json.loads(settings_with({"SECRET_KEY": "k", "DATABASE_URL": "postgresql://u@db:5432/x"}, tmp_path).stdout)
    assert out["engine"] == "django.db.backends.postgresql"
    assert out["name"] == "x"


def test_broker_url_switches_to_redis_or_rabbitmq(tmp_path):
    for url in ["redis://127.0.0.1:6379/0", "amqp://guest:guest@127.0.0.1:5672//"]:
        out = json.loads(settings_with({"SECRET_KEY": "k", "CELERY_BROKER_URL": url}, tmp_path).stdout)
        assert out["broker"] == url
        assert out["fs"] is None


def test_secret_key_is_required_unless_debug(tmp_path):
    failed = settings_with({}, tmp_path)
    assert failed.returncode != 0 and "SECRET_KEY is required" in failed.stderr
    ok = settings_with({"DJANGO_DEBUG": "True"}, tmp_path)
    assert ok.returncode == 0 and json.loads(ok.stdout)["debug"] is True


def test_booleans_are_strict(tmp_path):
    failed = settings_with({"SECRET_KEY": "k", "DJANGO_DEBUG": "yes"}, tmp_path)
    assert failed.returncode != 0 and "DJANGO_DEBUG must be True or False" in failed.stderr
