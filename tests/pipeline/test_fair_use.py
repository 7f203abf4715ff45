"""Fair use of the workers: compute budgets per account and per LLM, sign-up and login throttles. Each attack of the
fair-use review is a test here or in its siblings (test_fair_use_names.py: look-alike LLM names;
test_fair_use_fingerprints.py: trivial variants are one kernel; test_fair_use_harness.py: budgets charged from
real harness runs)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from catalogue.models import LLM, Kernel, Submission
from evaluator.models import ComputeBudget, Evaluation
from evaluator.selectors.budget import budget_for_user
from tests.pipeline.fair_use import finish, samples, token_client, upload
from tests.pipeline.helpers import DEMO_SET

pytestmark = pytest.mark.django_db


# --- Compute budget ----------------------------------------------------------------------------------------------


HANG_IN_INIT = """import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        while True:
            pass
"""


def test_a_bundle_of_two_thousand_hangs_from_a_new_account_is_refused_whole_with_429(demo_problems, api, sent):
    response = upload(api, samples(2000, HANG_IN_INIT))
    assert response.status_code == 429, response.content
    body = response.json()
    assert body["limit"] == "kernels_per_day" and body["subject"] == "account 'alice'"
    assert "2000 kernels" in body["detail"] and "1000 kernels per day" in body["detail"]
    assert "Nothing was queued" in body["detail"] and response.headers["Retry-After"]
    assert Submission.objects.count() == 0 and Evaluation.objects.count() == 0 and not sent.calls


def test_the_default_budget_takes_a_full_kernelbench_run(settings):
    # 250 problems x 4 samples in a day, all queued at once.
    assert settings.BUDGET_KERNELS_PER_DAY >= 1000 and settings.BUDGET_QUEUED_MAX >= 1000
    # ...while a day of the harness's longest runs (every kernel hanging until the timeout) does not fit.
    assert settings.BUDGET_GPU_SECONDS_PER_DAY < 1000 * settings.EVALUATOR_HARNESS_TIMEOUT / 10


def test_kernels_per_day_counts_over_24_hours_and_says_when_it_resets(demo_problems, api, settings, sent):
    settings.BUDGET_KERNELS_PER_DAY = 5
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        assert upload(api, samples(3)).status_code == 202
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        assert upload(api, samples(2, start=3)).status_code == 202
    with time_machine.travel(start + timedelta(hours=2), tick=False):
        refused = upload(api, samples(2, start=5))
        assert refused.status_code == 429
        body = refused.json()
        # The 5 kernels in the window leave it in upload order: 2 more fit once the first upload's leave.
        assert body["limit"] == "kernels_per_day"
        assert body["resets_at"] == (start + timedelta(hours=24)).isoformat()
        assert "5 used" in body["detail"] and "0 more fit" in body["detail"]
        assert int(refused.headers["Retry-After"]) == 22 * 3600 + 1
    with time_machine.travel(start + timedelta(hours=24, seconds=1), tick=False):
        assert upload(api, samples(2, start=5)).status_code == 202
    assert Submission.objects.count() == 3


def test_queued_at_once_frees_as_kernels_finish(demo_problems, api, settings, sent):
    settings.BUDGET_QUEUED_MAX = 3
    assert upload(api, samples(3)).status_code == 202
    refused = upload(api, samples(1, start=3))
    assert refused.status_code == 429 and refused.json()["limit"] == "queued_max"
    assert "3 queued or running" in refused.json()["detail"]
    finish(Evaluation.objects.order_by("pk").first(), speedup=1.0)
    assert upload(api, samples(1, start=3)).status_code == 202


def test_gpu_seconds_are_charged_from_finished_evaluations(demo_problems, api, settings, sent):
    settings.BUDGET_GPU_SECONDS_PER_DAY = 100
    assert upload(api, samples(2)).status_code == 202
    first, second = Evaluation.objects.order_by("pk")
    finish(first, speedup=1.0, seconds=60)
    finish(second, speedup=1.0, seconds=45)
    refused = upload(api, samples(1, start=2))
    assert refused.status_code == 429
    body = refused.json()
    assert body["limit"] == "gpu_seconds_per_day" and "100 GPU-seconds per day, 105 used" in body["detail"]
    # Freed once the first evaluation's 60 s leave the window: 24 hours after it finished.
    first.refresh_from_db()
    assert body["resets_at"] == (first.finished_at + timedelta(hours=24)).isoformat()


def test_the_llm_has_a_budget_of_its_own_across_its_uploaders(demo_problems, api, user, bob, settings, sent):
    from django.contrib.auth.models import Group

    team = Group.objects.create(name="lab")
    user.groups.add(team)
    bob.groups.add(team)
    assert upload(api, samples(4)).status_code == 202
    LLM.objects.filter(name="model-a").update(owner_group=team)
    ComputeBudget.objects.create(llm=LLM.objects.get(name="model-a"), kernels_per_day=5)
    refused = upload(token_client(bob), samples(2, start=4))
    assert refused.status_code == 429 and refused.json()["subject"] == "LLM 'model-a'"
    assert upload(token_client(bob), samples(1, start=4)).status_code == 202  # bob's own account has room


def test_staff_raise_an_account_and_an_llm_budget_in_the_admin(
    demo_problems, api, client, user, settings, sent, django_user_model
):
    settings.BUDGET_KERNELS_PER_DAY = 2
    assert upload(api, samples(2)).status_code == 202
    assert upload(api, samples(1, start=2)).json()["subject"] == "account 'alice'"
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw-root-123"))
    form = {"kernels_per_day": 10, "gpu_seconds_per_day": "", "queued_max": "", "note": "lab run"}
    assert client.post("/admin/evaluator/computebudget/add/", {**form, "user": user.pk}).status_code == 302
    assert budget_for_user(user=user).limit("kernels_per_day").limit == 10
    refused = upload(api, samples(1, start=2))  # the LLM's own budget still has the default
    assert refused.status_code == 429 and refused.json()["subject"] == "LLM 'model-a'"
    llm = LLM.objects.get(name="model-a")
    assert client.post("/admin/evaluator/computebudget/add/", {**form, "llm": llm.pk}).status_code == 302
    assert upload(api, samples(1, start=2)).status_code == 202


def test_the_web_form_refuses_over_budget_with_429_naming_the_limit(demo_problems, client, user, settings, sent):
    settings.BUDGET_KERNELS_PER_DAY = 2
    client.force_login(user)
    payload = {"bundle": SimpleUploadedFile("run.zip", samples(3)), "problem_set": DEMO_SET, "hardware": "cpu"}
    response = client.post("/submit/", {**payload, "new_llm": "mine"})
    assert response.status_code == 429
    assert "more than the 2 kernels per day of account" in response.content.decode()
    assert Submission.objects.count() == 0


def test_the_account_page_and_the_api_show_the_budget(demo_problems, api, client, user, settings, sent):
    settings.BUDGET_KERNELS_PER_DAY = 50
    assert upload(api, samples(3)).status_code == 202
    body = api.get("/api/budget/").json()
    kernels = next(lim for lim in body["account"]["limits"] if lim["name"] == "kernels_per_day")
    assert (kernels["limit"], kernels["used"], kernels["remaining"]) == (50, 3, 47)
    assert [entry["subject"] for entry in body["llms"]] == ["LLM 'model-a'"]
    assert APIClient().get("/api/budget/").status_code in (401, 403)
    client.force_login(user)
    page = client.get("/account/").content.decode()
    assert "Compute budget" in page and "kernels per day" in page and "GPU-seconds per day" in page


def test_staff_and_project_uploads_have_no_budget(demo_problems, client, settings, sent, django_user_model):
    from leaderboard.services.submissions import submission_create

    settings.BUDGET_KERNELS_PER_DAY = 1
    staff = django_user_model.objects.create_user(username="root", password="x", is_staff=True)
    for uploader in (None, staff):
        submission_create(
            uploader=uploader,
            llm_name="demo-x",
            filename="r.zip",
            data=samples(3),
            problem_set=DEMO_SET,
            allow_duplicate=True,
        )
    assert Kernel.objects.count() == 6
    client.force_login(staff)
    assert "Staff accounts have no compute budget" in client.get("/account/").content.decode()
    assert client.get("/api/budget/").json()["account"] == {"subject": "account 'root'", "exempt": True, "limits": []}


# --- Sign-up and login throttles ---------------------------------------------------------------------------------


@pytest.fixture
def signup_counts():
    """The sign-up counts live in the process's throttle cache: leave none behind for later tests of the session."""
    from django.core.cache import caches

    yield
    caches["throttle"].clear()


def test_sign_ups_from_one_address_are_throttled(client, settings, signup_counts):
    codes = []
    for n in range(7):
        response = client.post(
            "/accounts/signup/", {"username": f"user{n}", "password1": "Zq8!long-pass", "password2": "Zq8!long-pass"}
        )
        codes.append(response.status_code)
        client.logout()
    assert codes == [302] * 5 + [429] * 2
    assert "Too many accounts" in response.content.decode()
    other = client.post(
        "/accounts/signup/",
        {"username": "elsewhere", "password1": "Zq8!long-pass", "password2": "Zq8!long-pass"},
        REMOTE_ADDR="10.1.2.3",
    )
    assert other.status_code == 302  # another address


def test_one_password_on_many_usernames_locks_the_address_out(client, user, settings, django_user_model):
    codes = [
        client.post("/accounts/login/", {"username": f"guess{n}", "password": "Summer2026!"}).status_code
        for n in range(40)
    ]
    assert codes[: settings.LOGIN_ADDRESS_FAILURE_LIMIT - 1] == [200] * (settings.LOGIN_ADDRESS_FAILURE_LIMIT - 1)
    assert set(codes[settings.LOGIN_ADDRESS_FAILURE_LIMIT :]) == {429}
    owner = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert owner.status_code == 429 and "_auth_user_id" not in client.session  # the address is locked out
    elsewhere = client.post(
        "/accounts/login/", {"username": "alice", "password": "pw-alice-123"}, REMOTE_ADDR="10.9.9.9"
    )
    assert elsewhere.status_code == 302


def test_the_pair_limit_still_locks_one_username_first(client, user, settings):
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"}).status_code == 429
    # The address itself is not locked yet (10 failures, limit 30): another username can still log in from it.
    assert client.post("/accounts/login/", {"username": "bob", "password": "nope"}).status_code == 200


def test_the_sites_own_re_evaluations_neither_count_nor_wait(demo_problems, api, user, settings, sent):
    from evaluator.models import ReEvaluation
    from evaluator.selectors.budget import budget_spent

    settings.BUDGET_GPU_SECONDS_PER_DAY = 100
    assert upload(api, samples(1)).status_code == 202
    (first,) = Evaluation.objects.all()
    finish(first, speedup=1.5, seconds=60)
    Evaluation.objects.filter(pk=first.pk).update(is_current=False)
    again = Evaluation.objects.create(kernel=first.kernel, hardware="cpu", status=Evaluation.Status.QUEUED)
    ReEvaluation.objects.create(evaluation=again, previous=first, kernel=first.kernel, hardware="cpu", stack="new")
    finish(again, speedup=1.4, seconds=100)
    gpu = budget_for_user(user=user).limit("gpu_seconds_per_day")
    assert gpu.used == 60  # only the uploader's own evaluation
    Evaluation.objects.filter(pk=first.pk).update(harness_seconds=500)  # now the account is spent...
    Evaluation.objects.filter(pk=again.pk).update(status=Evaluation.Status.RUNNING, finished_at=None)
    assert budget_spent(evaluation=again) is None  # ...and the site's re-evaluation still runs
