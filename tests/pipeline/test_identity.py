"""Identity and abuse: LLM owners, duplicate uploads, tokens hashed at rest, shared throttles, login
lockout."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from catalogue.models import LLM, Submission
from evaluator.models import Evaluation
from leaderboard.services.llms import llm_get_or_create
from leaderboard.services.tokens import api_token_create
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

pytestmark = pytest.mark.django_db


def upload(client: APIClient, data: bytes, name: str = "run.zip", **fields):
    payload = {"bundle": SimpleUploadedFile(name, data), "llm": "model-a", "problem_set": DEMO_SET, **fields}
    return client.post("/api/submissions/", payload, format="multipart")


def post_bundle(client, data: bytes, name: str = "run.zip", **fields):
    payload = {"bundle": SimpleUploadedFile(name, data), "problem_set": DEMO_SET, "hardware": "cpu", **fields}
    return client.post("/submit/", payload)


def zip_of(*kernels: tuple[int, int, int]) -> bytes:
    return make_zip({kernel_name(*k): demo_kernel(*k) for k in kernels})


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user)}")
    return client


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


# --- LLM owners --------------------------------------------------------------------------------------------------


def test_first_upload_makes_the_uploader_owner_and_others_get_403(demo_problems, api, user, bob, sent):
    assert upload(api, zip_of((1, 1, 0))).status_code == 202
    llm = LLM.objects.get(name="model-a")
    assert llm.owner == user
    response = upload(token_client(bob), zip_of((1, 2, 0)))
    assert response.status_code == 403 and "model-a" in response.json()["detail"]
    assert Submission.objects.count() == 1  # bob changed nothing
    body = APIClient().get(f"/api/llms/{llm.pk}/").json()
    assert body["owner"] == "alice"


def test_group_members_may_upload_and_ownerless_llms_are_staff_only(demo_problems, api, user, bob, staff, sent):
    from django.contrib.auth.models import Group

    ownerless = llm_get_or_create(name="Imported")  # demo and imported LLMs have no owner
    assert upload(api, zip_of((1, 1, 0)), llm="Imported").status_code == 403
    assert upload(token_client(staff), zip_of((1, 1, 0)), llm="Imported").status_code == 202
    lab = Group.objects.create(name="lab")
    bob.groups.add(lab)
    ownerless.owner_group = lab
    ownerless.save()
    assert upload(token_client(bob), zip_of((1, 2, 0)), llm="Imported").status_code == 202
    assert upload(api, zip_of((1, 3, 0)), llm="Imported").status_code == 403


def test_staff_transfer_ownership_through_the_api(demo_problems, api, user, bob, staff, sent):
    upload(api, zip_of((1, 1, 0)))
    llm = LLM.objects.get(name="model-a")
    url = f"/api/llms/{llm.pk}/transfer/"
    assert api.post(url, {"owner": "bob"}, format="json").status_code == 403  # the owner is not staff
    response = token_client(staff).post(url, {"owner": "bob"}, format="json")
    assert response.status_code == 200 and response.json()["owner"] == "bob"
    assert upload(token_client(bob), zip_of((1, 2, 0))).status_code == 202
    assert upload(api, zip_of((1, 3, 0))).status_code == 403
    assert token_client(staff).post(url, {"owner": "nobody-here"}, format="json").status_code == 400


def test_web_form_refuses_another_owners_llm_with_a_clear_error(demo_problems, client, user, bob, sent):
    llm_get_or_create(name="Theirs", owner=bob)
    client.force_login(user)
    response = post_bundle(client, zip_of((1, 1, 0)), new_llm="theirs")
    assert response.status_code == 403
    assert "belongs to bob" in response.content.decode()
    assert not Submission.objects.exists()
    # The form only offers LLMs the user may upload to.
    assert "Theirs" not in client.get("/submit/").content.decode()


def test_llm_page_shows_the_owner(demo_problems, client, user):
    llm = llm_get_or_create(name="Owned", owner=user)
    html = client.get(f"/llms/{llm.pk}/").content.decode()
    assert "Owner" in html and "alice" in html


# --- Duplicate uploads -------------------------------------------------------------------------------------------


def test_identical_bundle_returns_the_existing_submission_over_the_api(demo_problems, api, sent):
    data = zip_of((1, 1, 0), (1, 2, 0))
    first = upload(api, data)
    again = upload(api, data)
    assert first.status_code == 202 and first.json()["duplicate"] is False
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["id"] == first.json()["id"]
    assert Submission.objects.count() == 1 and Evaluation.objects.count() == 2
    # The same single-kernel file for another problem is a new submission.
    single = demo_kernel(1, 2).encode()
    assert upload(api, single, name="k.py", level=1, problem_id=2).status_code == 202
    assert upload(api, single, name="k.py", level=1, problem_id=3).status_code == 202
    assert upload(api, single, name="k.py", level=1, problem_id=3).status_code == 200


def test_identical_bundle_on_the_web_redirects_to_the_existing_submission(demo_problems, client, user, sent):
    client.force_login(user)
    data = zip_of((1, 1, 0))
    first = post_bundle(client, data, new_llm="Mine")
    again = post_bundle(client, data, new_llm="Mine")
    assert again.status_code == 302 and again["Location"] == first["Location"]
    assert "already uploaded" in client.get(again["Location"]).content.decode()
    assert Submission.objects.count() == 1


# --- Tokens hashed at rest ---------------------------------------------------------------------------------------


def test_tokens_are_stored_as_a_hash_and_still_work(demo_problems, user, sent):
    from catalogue.models import ApiToken

    key = api_token_create(user=user)
    stored = ApiToken.objects.get(user=user)
    assert stored.digest == hashlib.sha256(key.encode()).hexdigest() and key[:8] == stored.prefix
    dump = "".join(str(row) for row in ApiToken.objects.values_list())
    assert key not in dump  # a database leak does not hand out the key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert upload(client, zip_of((1, 1, 0))).status_code == 202
    client.credentials(HTTP_AUTHORIZATION=f"Token {stored.digest}")  # the stored value is not a key
    assert upload(client, zip_of((1, 2, 0))).status_code == 401
    user.is_active = False
    user.save()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert upload(client, zip_of((1, 2, 0))).status_code == 401


def test_token_command_prints_a_working_key_once(user, capsys):
    call_command("create_api_token", "alice")
    key = capsys.readouterr().out.strip().split()[-1]
    assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/submissions/").status_code == 200
    from leaderboard.selectors.tokens import api_token_user

    assert api_token_user(key=key) == user


# --- Throttles and login lockout ---------------------------------------------------------------------------------


def test_web_uploads_are_throttled_with_the_api_in_a_shared_cache(demo_problems, client, api, user, settings, sent):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "submissions": "3/hour"}}  # fmt: skip
    settings.CACHES = {
        **settings.CACHES,
        "throttle": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "kbv_cache"},
    }
    call_command("createcachetable")
    client.force_login(user)
    codes = [post_bundle(client, zip_of((1, k, 0)), new_llm="Mine").status_code for k in (1, 2)]
    codes.append(upload(api, zip_of((1, 3, 0)), llm="Mine").status_code)  # the API counts with the web form
    refused = post_bundle(client, zip_of((2, 1, 0)), new_llm="Mine")
    assert codes == [302, 302, 202] and refused.status_code == 429
    assert "Too many uploads" in refused.content.decode()
    assert Submission.objects.count() == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM kbv_cache")
        assert cursor.fetchone()[0] >= 1  # the counts live in the database, shared by every process


def test_login_locks_out_after_repeated_failures(client, user, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    other = client.post("/accounts/login/", {"username": "root", "password": "wrong"}, REMOTE_ADDR="10.0.0.9")
    assert other.status_code == 200  # another username from another address is not locked out


def test_successful_login_still_works(client, user):
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(user.pk)


def test_throttle_cache_is_shared_by_default_and_redis_when_configured(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    code = "import json, django; from django.conf import settings; django.setup(); print(json.dumps(settings.CACHES))"
    scrub = {"CACHE_URL", "REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"}
    base = {k: v for k, v in os.environ.items() if k not in scrub}
    base.update({"DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path), "SECRET_KEY": "k"})

    def caches_with(**env: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO_ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["throttle"]

    assert caches_with() == {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "kbv_cache"}
    for env in ({"CACHE_URL": "redis://127.0.0.1:6379/3"}, {"REDIS_URL": "redis://127.0.0.1:6379/3"}):
        throttle = caches_with(**env)
        assert throttle["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
        assert throttle["LOCATION"] == "redis://127.0.0.1:6379/3"


def test_migration_carries_drf_tokens_over_as_hashes_and_wipes_them(user):
    import importlib
    from types import SimpleNamespace

    from django.apps import apps

    from catalogue.models import ApiToken
    from leaderboard.selectors.tokens import api_token_user

    migration = importlib.import_module("catalogue.migrations.0002_owners_hashed_tokens")
    key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id bigint, created text)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, '2026-01-01')", [key, user.pk])
    migration.hash_drf_tokens(apps, SimpleNamespace(connection=connection))  # what it uses of a schema editor
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0  # no clear-text key is left behind
    assert api_token_user(key=key) == user and ApiToken.objects.get(user=user).prefix == key[:8]


def test_a_forged_forwarded_for_header_does_not_reset_the_anonymous_throttle(db, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "2/minute"}}  # fmt: skip
    client = APIClient()
    codes = [client.get("/api/llms/", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}").status_code for n in range(3)]
    assert codes == [200, 200, 429]


def test_staff_transfer_in_the_admin_and_see_tokens_only_by_prefix(client, user, bob, staff):
    staff.is_superuser = True
    staff.save()
    key = api_token_create(user=bob)
    llm = llm_get_or_create(name="Handed over", owner=user)
    client.force_login(staff)
    page = client.get("/admin/catalogue/apitoken/").content.decode()
    assert key[:8] in page and key not in page
    assert client.get("/admin/catalogue/llm/").status_code == 200
    response = client.post(
        f"/admin/catalogue/llm/{llm.pk}/change/", {"name": llm.name, "owner": bob.pk, "organisation": "", "notes": ""}
    )
    assert response.status_code == 302
    llm.refresh_from_db()
    assert llm.owner == bob
