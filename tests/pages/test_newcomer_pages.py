"""The pages a newcomer reads: sign-up, index pages, compare, error pages, the audit queue, API docs."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from evaluator.models import AuditFlag
from leaderboard.forms import SubmitForm
from leaderboard.selectors.problem_sets import problem_set_default
from tests.factories import AuditFlagFactory, LLMFactory, ProblemFactory

pytestmark = pytest.mark.django_db


# --- the default problem set is one that exists -------------------------------------------------------------------
def test_default_problem_set_falls_back_to_the_one_that_exists(settings):
    settings.PROBLEM_SET_DEFAULT = "kernelbench-main"
    assert problem_set_default() == "kernelbench-main"  # nothing imported: the setting, and uploads say so
    ProblemFactory(problem_set="demo", level=1, problem_id=1)
    assert problem_set_default() == "demo"
    form = SubmitForm()
    assert form.fields["problem_set"].initial == "demo"
    assert [c for c, _ in form.fields["problem_set"].choices] == ["demo"]  # no phantom set to pick
    ProblemFactory(problem_set="kernelbench-main", level=1, problem_id=1)
    assert problem_set_default() == "kernelbench-main"  # the configured one wins when it exists


def test_unknown_problem_set_lists_the_valid_ones(client, django_user_model):
    from leaderboard.bundles import BundleError
    from leaderboard.services.submissions import submission_create
    from tests.factories import KERNEL_SOURCE

    ProblemFactory(problem_set="demo", level=1, problem_id=1)
    with pytest.raises(BundleError, match=r"Unknown problem set 'nope'\. Valid problem sets: demo\."):
        submission_create(
            uploader=None, llm_name="m", filename="k.py", data=KERNEL_SOURCE.encode(), problem_set="nope", level=1,
            problem_id=1,
        )  # fmt: skip


# --- sign-up ---------------------------------------------------------------------------------------------------------
def test_sign_up_logs_in_and_lands_on_the_account_page(client):
    page = client.get("/").content.decode()
    assert 'href="/accounts/signup/"' in page and "/accounts/login/" in page
    assert client.get("/accounts/signup/").status_code == 200
    bad = client.post("/accounts/signup/", {"username": "newbie", "password1": "x", "password2": "y"})
    assert bad.status_code == 400
    done = client.post(
        "/accounts/signup/", {"username": "newbie", "password1": "kernel-pw-9876", "password2": "kernel-pw-9876"}
    )
    assert done.status_code == 302 and done.url == "/account/"
    account = client.get("/account/")
    assert account.status_code == 200 and "newbie" in account.content.decode()


def test_sign_up_with_approval_makes_an_inactive_account(client, settings):
    settings.SIGNUP_REQUIRES_APPROVAL = True
    done = client.post(
        "/accounts/signup/", {"username": "waiting", "password1": "kernel-pw-9876", "password2": "kernel-pw-9876"}
    )
    assert done.status_code == 302 and done.url.startswith("/accounts/login/")
    assert get_user_model().objects.get(username="waiting").is_active is False
    assert client.get("/submit/").status_code == 302  # not logged in
    refused = client.post("/accounts/login/", {"username": "waiting", "password": "kernel-pw-9876"})
    assert refused.status_code == 200 and "_auth_user_id" not in client.session


# --- index pages and compare ----------------------------------------------------------------------------------
def test_problem_index_searches_and_filters(client, add_sample):
    relu = ProblemFactory(level=1, problem_id=19, name="ReLU")
    ProblemFactory(level=2, problem_id=1, name="Conv2d_ReLU_BiasAdd")
    ProblemFactory(level=1, problem_id=3, name="Softmax", active=False, inactive_reason="degenerate")
    add_sample("A", relu)
    html = client.get("/problems/").content.decode()
    assert "ReLU" in html and "Softmax" in html and 'href="/favicon.ico"' not in html
    html = client.get("/problems/?q=relu&level=1").content.decode()
    assert "L1/19" in html and "Conv2d" not in html and "Softmax" not in html
    assert "Softmax" in client.get("/problems/?status=inactive").content.decode()
    assert "L1/19" not in client.get("/problems/?status=inactive").content.decode()


def test_llm_index_searches(client, add_sample):
    add_sample("gpt-kernel", ProblemFactory())
    LLMFactory(name="claude-kernel", organisation="Lab B")
    html = client.get("/llms/").content.decode()
    assert "gpt-kernel" in html and "claude-kernel" in html
    html = client.get("/llms/?q=claude").content.decode()
    assert "claude-kernel" in html and "gpt-kernel" not in html
    assert "claude-kernel" in client.get("/llms/?organisation=Lab+B").content.decode()


def test_compare_shows_two_llms_side_by_side(client, add_sample):
    p1, p2 = ProblemFactory(level=1, problem_id=1, name="Matmul"), ProblemFactory(level=1, problem_id=2, name="Relu")
    a1 = add_sample("A", p1, speedup=2.0)
    add_sample("B", p1, speedup=1.2)
    add_sample("A", p2, speedup=0.5, correct=False)
    add_sample("B", p2, speedup=1.1)
    a, b = a1.kernel.llm, LLMFactory(name="B")
    index = client.get("/").content.decode()
    assert "/compare/" in index
    assert f"/compare/?a={a.pk}" in client.get(f"/llms/{a.pk}/?hardware=h200").content.decode()
    html = client.get(f"/compare/?a={a.pk}&b={b.pk}&hardware=h200&problem_set=kernelbench-main").content.decode()
    assert "Matmul" in html and "Relu" in html
    assert "<strong>2.00" in html or "<strong>2.0" in html  # A's faster kernel is marked
    assert "Incorrect" in html
    assert "A wins 1, B wins 1, 0 not distinguishable" in " ".join(html.split())


# --- error pages, nav, favicon, API docs ---------------------------------------------------------------------------
def test_error_pages_are_styled_and_offer_a_login(client, django_user_model):
    missing = client.get("/no-such-page/")
    assert missing.status_code == 404 and "Not found" in missing.content.decode()
    assert 'href="/static/favicon.svg"' in missing.content.decode()
    anonymous = client.get("/audit/")
    assert anonymous.status_code == 302 and anonymous.url.startswith("/accounts/login/?next=/audit/")
    client.force_login(django_user_model.objects.create_user(username="bob", password="pw-bob-123456"))
    forbidden = client.get("/audit/")
    assert forbidden.status_code == 403 and "Not allowed" in forbidden.content.decode()
    assert 'href="/audit/"' not in client.get("/").content.decode()  # no Audit link for non-staff


def test_favicon_is_served(client):
    response = client.get("/static/favicon.svg")
    assert response.status_code == 200 and b"<svg" in b"".join(response.streaming_content)


def test_api_docs_link_back_to_the_site(client):
    html = client.get("/api/docs/").content.decode()
    assert 'href="/"' in html and "swagger-ui" in html


# --- the audit queue ---------------------------------------------------------------------------------------------
def test_audit_queue_filters_paginates_and_explains_class_codes(client, django_user_model, add_sample):
    client.force_login(django_user_model.objects.create_user(username="root", password="x", is_staff=True))
    ranked = add_sample("ranked-llm", ProblemFactory())
    unranked = add_sample("wrong-llm", ProblemFactory(), correct=False)
    AuditFlagFactory(kernel=unranked.kernel, verdict="hack", severity="high", classes=["B7"])
    AuditFlagFactory(kernel=ranked.kernel, verdict="suspicious", severity="low", classes=["A6"])
    html = client.get("/audit/").content.decode()
    assert 'href="/audit/"' in html  # the staff nav link
    assert html.index("ranked-llm") < html.index("wrong-llm")  # kernels that count come first
    assert 'id="class-B7"' in html and "shape guards" in html  # the legend
    only_b7 = client.get("/audit/?cls=B7").content.decode()
    assert "wrong-llm" in only_b7 and "ranked-llm" not in only_b7
    assert "ranked-llm" not in client.get("/audit/?severity=high").content.decode()
    for _ in range(55):
        AuditFlagFactory(kernel=unranked.kernel, verdict="suspicious", review_state=AuditFlag.Review.SUSPECTED)
    first = client.get("/audit/").content.decode()
    assert "Page 1 of 2" in first and 'rel="next"' in first


def test_server_error_page_renders_without_a_request_context(rf):
    from django.views.defaults import server_error

    response = server_error(rf.get("/"))
    assert (
        response.status_code == 500
        and b"Something went wrong" in response.content
        and b"/accounts/login/" in (response.content)
    )
