"""`manage.py check --deploy` with production settings, and the headers those settings put on every page."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

SCRUBBED = {
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "CACHE_URL",
    "SECRET_KEY",
    "DJANGO_DEBUG",
    "DJANGO_ALLOW_ASYNC_UNSAFE",  # set for the whole session by the browser tests' conftest, never in deployment
}


def deploy_check(tmp_path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    base.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        VAR_DIR=str(tmp_path),
        DJANGO_DEBUG="False",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="kbv.example.org",
        **env,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_secure_https(tmp_path):
    done = deploy_check(tmp_path, SECURE_HTTPS="True")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_without_secure_https_check_deploy_says_what_is_missing(tmp_path):
    done = deploy_check(tmp_path)
    assert done.returncode != 0
    for code in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert code in done.stdout + done.stderr


def test_secure_https_is_true_or_false_only(tmp_path):
    done = deploy_check(tmp_path, SECURE_HTTPS="yes")
    assert done.returncode != 0 and "SECURE_HTTPS must be True or False" in done.stderr


# --- Content-Security-Policy -------------------------------------------------------------------------------------


def _directives(header: str) -> dict[str, list[str]]:
    parts = (p.split() for p in header.split(";") if p.strip())
    return {p[0]: p[1:] for p in parts}


@pytest.mark.django_db
def test_every_response_carries_a_csp_that_allows_no_inline_script(client):
    for url in ("/", "/api/leaderboard/", "/api/docs/", "/submit/"):
        policy = _directives(client.get(url)["Content-Security-Policy"])
        assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
        assert policy["frame-ancestors"] == ["'none'"] and policy["script-src"] == ["'self'"]


def test_the_api_docs_page_has_no_inline_script(client):
    html = client.get("/api/docs/").content.decode()
    assert re.findall(r"<script(?![^>]*\ssrc=)[^>]*>", html) == []
