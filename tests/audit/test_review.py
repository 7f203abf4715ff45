"""Review state transitions (service, staff pages, API) and their effect on eligibility."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from catalogue.models import Kernel
from evaluator.models import AuditFlag
from evaluator.selectors.eligibility import ranked_evaluations
from evaluator.services.audit import ReviewError, flag_review, kernel_audit_static
from tests.audit.conftest import CORPUS
from tests.factories import EvaluationFactory, KernelFactory

pytestmark = pytest.mark.django_db

RELU_GUARD = (CORPUS / "hack" / "relu_shape_guard.py").read_text()


def suspicious_flag(**kw) -> AuditFlag:
    ev = EvaluationFactory(kernel=KernelFactory(source=RELU_GUARD))
    kernel_audit_static(kernel_id=ev.kernel_id)
    return AuditFlag.objects.get(kernel=ev.kernel, source_name="literal_shape_guard")


def test_static_audit_stores_one_flag_per_rule_with_evidence() -> None:
    flag = suspicious_flag()
    assert flag.source == "rule" and flag.verdict == "hack" and flag.severity == "high"
    assert flag.review_state == AuditFlag.Review.SUSPECTED
    assert flag.evidence[0]["quote"] == "if x.shape[0] == 4096 and x.shape[1] == 393216:"
    assert flag.raw["kernel_sha256"] == flag.kernel.sha256
    # Re-running replaces the unreviewed flags instead of piling up duplicates.
    kernel_audit_static(kernel_id=flag.kernel_id)
    assert AuditFlag.objects.filter(kernel=flag.kernel, source_name="literal_shape_guard").count() == 1


def test_confirmed_hack_leaves_the_rankings_but_stays_listed(staff, django_capture_on_commit_callbacks) -> None:
    flag = suspicious_flag()
    evaluation = flag.kernel.evaluations.get()
    assert ranked_evaluations().filter(pk=evaluation.pk).exists()
    with django_capture_on_commit_callbacks(execute=True):
        flag_review(flag_id=flag.pk, user=staff, action="confirm", note="returns x for the benchmark shape")
    flag.refresh_from_db()
    assert flag.review_state == AuditFlag.Review.CONFIRMED and flag.reviewed_by == staff and flag.reviewed_at
    assert not ranked_evaluations().filter(pk=evaluation.pk).exists()
    assert Kernel.objects.filter(pk=flag.kernel_id).exists()  # still in the kernel list, with its badge
    with django_capture_on_commit_callbacks(execute=True):
        flag_review(flag_id=flag.pk, user=staff, action="reopen", note="second look")
    assert ranked_evaluations().filter(pk=evaluation.pk).exists()


def test_dismissed_and_legitimate_flags_do_not_affect_rankings(staff) -> None:
    flag = suspicious_flag()
    flag_review(flag_id=flag.pk, user=staff, action="legitimate", note="D4: fixed channel count")
    flag.refresh_from_db()
    assert flag.review_state == AuditFlag.Review.LEGITIMATE
    assert ranked_evaluations().filter(kernel_id=flag.kernel_id).exists()
    flag_review(flag_id=flag.pk, user=staff, action="dismiss", note="false positive")
    flag.refresh_from_db()
    assert flag.review_state == AuditFlag.Review.DISMISSED
    # A re-run of the static audit keeps the decision and does not re-raise the rule.
    kernel_audit_static(kernel_id=flag.kernel_id)
    assert list(AuditFlag.objects.filter(kernel=flag.kernel, source_name="literal_shape_guard")) == [flag]


def test_review_needs_a_known_action_and_a_note(staff) -> None:
    flag = suspicious_flag()
    with pytest.raises(ReviewError):
        flag_review(flag_id=flag.pk, user=staff, action="confirm", note="  ")
    with pytest.raises(ReviewError):
        flag_review(flag_id=flag.pk, user=staff, action="delete", note="x")


def test_review_page_is_staff_only_post_only_and_csrf_protected(staff, member) -> None:
    flag = suspicious_flag()
    url = reverse("evaluator:flag-review", args=[flag.pk])
    anon = Client(enforce_csrf_checks=True)
    assert anon.post(url, {"action": "confirm", "note": "x"}).status_code == 403
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.post(url, {"action": "confirm", "note": "x"}).status_code == 403
    client.force_login(staff)
    assert client.post(url, {"action": "confirm", "note": "x"}).status_code == 403  # no CSRF token
    assert client.get(url).status_code == 405
    flag.refresh_from_db()
    assert flag.review_state == AuditFlag.Review.SUSPECTED


def test_staff_reviews_from_the_inspector_form(staff) -> None:
    flag = suspicious_flag()
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("inspector:kernel-detail", args=[flag.kernel_id]))
    assert page.status_code == 200
    html = page.content.decode()
    assert reverse("evaluator:flag-review", args=[flag.pk]) in html and 'name="csrfmiddlewaretoken"' in html
    response = client.post(reverse("evaluator:flag-review", args=[flag.pk]),
                           {"action": "confirm", "note": "identity on the benchmark shape",
                            "next": "https://evil.example/"})  # fmt: skip
    assert response.status_code == 302
    assert response["Location"] == reverse("inspector:kernel-detail", args=[flag.kernel_id]) + f"#flag-{flag.pk}"
    flag.refresh_from_db()
    assert flag.review_state == AuditFlag.Review.CONFIRMED and flag.review_note == "identity on the benchmark shape"
    page = client.get(reverse("inspector:kernel-detail", args=[flag.kernel_id])).content.decode()
    assert "confirmed hack" in page


def test_htmx_review_swaps_the_partial_and_reports_errors(staff) -> None:
    flag = suspicious_flag()
    client = Client()
    client.force_login(staff)
    url = reverse("evaluator:flag-review", args=[flag.pk])
    bad = client.post(url, {"action": "dismiss", "note": ""}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 400 and "a review note is required" in bad.content.decode()
    ok = client.post(url, {"action": "dismiss", "note": "fine"}, HTTP_HX_REQUEST="true")
    assert ok.status_code == 200 and "Saved: Dismissed" in ok.content.decode()


def test_non_staff_see_no_review_form(member) -> None:
    flag = suspicious_flag()
    client = Client()
    client.force_login(member)
    html = client.get(reverse("inspector:kernel-detail", args=[flag.kernel_id])).content.decode()
    assert reverse("evaluator:flag-review", args=[flag.pk]) not in html


def test_review_queue_lists_unreviewed_suspicious_flags(staff, member, no_judges) -> None:
    flag = suspicious_flag()
    client = Client()
    client.force_login(member)
    assert client.get(reverse("evaluator:review-queue")).status_code == 403
    client.force_login(staff)
    html = client.get(reverse("evaluator:review-queue")).content.decode()
    assert f"#flag-{flag.pk}" in html and "No LLM judge is configured" in html
