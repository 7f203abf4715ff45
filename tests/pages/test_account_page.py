"""The account page's command to upload with a new token is the README's (`.venv/bin/kbv submit ...`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_new_token_comes_with_the_readmes_upload_command(client, django_user_model):
    user = django_user_model.objects.create_user(username="newcomer", password="x-pw-98765")
    client.force_login(user)
    html = client.post("/account/", {}).content.decode()
    token = re.search(r'id="api-token">([0-9a-f]+)<', html).group(1)
    shown = re.search(r'id="account-submit-command">([^<]+)</code>', html).group(1)
    readme = next(line for line in README.splitlines() if line.startswith(".venv/bin/kbv submit"))
    expected = readme.replace("http://127.0.0.1:8000", "http://testserver").replace("$TOKEN", token)
    assert shown == expected
