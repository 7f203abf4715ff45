"""The web side: /submit/ form, the submission page with htmx polling, its CSV, and the /account/ token page."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from catalogue.models import LLM, Submission
from evaluator.models import Evaluation
from evaluator.tasks.evaluation import evaluate_kernel
from leaderboard.selectors.tokens import api_token_user
from leaderboard.services.llms import llm_get_or_create
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip, record

pytestmark = pytest.mark.django_db


def post_bundle(client, data: bytes, name: str = "run.zip", **fields):
    payload = {"bundle": SimpleUploadedFile(name, data), "problem_set": DEMO_SET, "hardware": "cpu", **fields}
    return client.post("/submit/", payload)


def test_submit_requires_login(client):
    response = client.get("/submit/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_submit_with_a_new_llm_lands_on_the_submission_page(demo_problems, client, user):
    client.force_login(user)
    assert client.get("/submit/").status_code == 200
    data = make_zip({kernel_name(1, 1): demo_kernel(1, 1), "notes.md": "x"})
    response = post_bundle(client, data, new_llm="Fresh LLM")
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    page = client.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200 and "Fresh LLM" in html
    assert 'hx-trigger="every 2s"' in html and "htmx-2.min.js" in html
    assert "notes.md" in html and "not a kernel file" in html  # the per-file report
    assert "1 kernels queued" in html


def test_submit_with_an_existing_llm(demo_problems, client, user):
    llm = llm_get_or_create(name="Existing", owner=user)
    client.force_login(user)
    post_bundle(client, demo_kernel(1, 2).encode(), name="k.py", llm=llm.pk, level=1, problem_id=2)
    assert Submission.objects.get().llm == llm and LLM.objects.count() == 1


def test_llm_choice_is_required_and_exclusive(demo_problems, client, user):
    client.force_login(user)
    llm = llm_get_or_create(name="Existing", owner=user)
    data = make_zip({kernel_name(1, 1): demo_kernel(1, 1)})
    assert "Pick an existing LLM or name a new one." in post_bundle(client, data).content.decode()
    assert "not both" in post_bundle(client, data, llm=llm.pk, new_llm="x").content.decode()
    assert not Submission.objects.exists()


def test_rejected_bundle_shows_reason_and_report(demo_problems, client, user):
    client.force_login(user)
    data = make_zip({kernel_name(4, 4): demo_kernel(1, 1)})
    response = post_bundle(client, data, new_llm="x")
    html = response.content.decode()
    assert response.status_code == 400
    assert "nothing was stored" in html and "unknown problem L4/4 in problem set demo" in html
    assert not Submission.objects.exists()


def test_htmx_request_gets_the_fragment_and_polling_stops_when_done(demo_problems, client, user, stand_in, sent):
    client.force_login(user)
    post_bundle(client, make_zip({kernel_name(1, 1): demo_kernel(1, 1)}), new_llm="x")
    submission = Submission.objects.get()
    fragment = client.get(f"/submissions/{submission.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and fragment.lstrip().startswith("<section")
    assert 'hx-trigger="every 2s"' in fragment and "0/1" in fragment
    stand_in.script = [record(speedup=1.75)]
    evaluate_kernel.apply(args=[Evaluation.objects.get().pk])
    fragment = client.get(f"/submissions/{submission.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in fragment and "1/1" in fragment and "1.75×" in fragment and "Verified" in fragment


def test_submission_page_is_public_and_404s_cleanly(demo_problems, client, user, sent):
    client.force_login(user)
    post_bundle(client, make_zip({kernel_name(1, 1): demo_kernel(1, 1)}), new_llm="x")
    client.logout()
    pk = Submission.objects.get().pk
    assert client.get(f"/submissions/{pk}/").status_code == 200
    assert client.get(f"/submissions/{pk}/results.csv").status_code == 200
    assert client.get("/submissions/424242/").status_code == 404


def test_account_shows_and_creates_a_token(client, user):
    assert client.get("/account/").status_code == 302
    client.force_login(user)
    assert "You have no API token yet" in client.get("/account/").content.decode()
    shown = client.post("/account/")  # the key is shown once, in this answer; only its hash is stored
    key = shown.context["new_key"]
    assert shown.status_code == 200 and key in shown.content.decode()
    assert key not in client.get("/account/").content.decode() and key[:8] in client.get("/account/").content.decode()
    assert api_token_user(key=key) == user
    again = client.post("/account/", {"regenerate": "1"}).context["new_key"]
    assert again != key and api_token_user(key=key) is None and api_token_user(key=again) == user


def test_admin_actions_rerun_evaluations_and_submissions(demo_problems, client, staff, sent):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    submission = submission_for_admin()
    ev = Evaluation.objects.get(kernel__submission=submission)
    response = client.post(
        "/admin/evaluator/evaluation/", {"action": "rerun_evaluations", "_selected_action": [ev.pk]}, follow=True
    )
    assert response.status_code == 200 and "Queued 1 re-runs" in response.content.decode()
    response = client.post(
        "/admin/catalogue/submission/",
        {"action": "rerun_submissions", "_selected_action": [submission.pk]},
        follow=True,
    )
    assert "Queued 1 re-runs." in response.content.decode()
    rows = Evaluation.objects.filter(kernel__submission=submission)
    assert rows.count() == 3 and rows.filter(is_current=True).count() == 1


def submission_for_admin() -> Submission:
    from leaderboard.services.submissions import submission_create

    data = make_zip({kernel_name(1, 1): demo_kernel(1, 1)})
    return submission_create(uploader=None, llm_name="m", filename="r.zip", data=data, problem_set=DEMO_SET)
