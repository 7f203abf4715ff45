"""On the pages: a degenerate problem's status and evidence on its page and on the board,
staff confirm or clear it (page form and admin action), and how many evaluations a baseline row aggregates."""

from __future__ import annotations

import pytest
from django.urls import reverse

from catalogue.models import Problem
from evaluator.models import Baseline
from tests.factories import BaselineFactory, ProblemFactory

pytestmark = pytest.mark.django_db
D = Problem.Degenerate
EVIDENCE = {
    "source": "evaluations",
    "evaluation_ids": [41, 42, 43],
    "count": 3,
    "varying": 0,
    "hardware": ["h200"],
    "first_at": "2026-12-01T10:00:00+00:00",
    "last_at": "2026-12-01T11:00:00+00:00",
    "found_at": "2026-12-01T11:00:01+00:00",
}


@pytest.fixture
def suspected(add_sample):
    problem = ProblemFactory(level=2, problem_id=99, name="Gemm_Max_Minus_Mean")
    add_sample("some-llm", problem, speedup=40.0)
    Problem.objects.filter(pk=problem.pk).update(
        degenerate=D.SUSPECTED,
        degenerate_evidence=EVIDENCE,
        active=False,
        inactive_reason="Degenerate: the reference output was constant in 3 evaluations (0 not).",
    )
    problem.refresh_from_db()
    return problem


def test_problem_page_shows_status_and_evidence_and_staff_form_only_to_staff(client, admin_client, suspected):
    url = reverse("leaderboard:problem-detail", args=[suspected.pk])
    html = client.get(url).content.decode()
    assert "Degenerate (found from evaluations)" in html and "<strong>3</strong> evaluations" in html
    assert "<code>41</code>, <code>42</code>, <code>43</code>" in html and "2026-12-01T10:00" in html
    assert "Confirm degenerate" not in html  # anonymous: no form
    assert "Confirm degenerate" in admin_client.get(url).content.decode()
    listing = client.get(reverse("leaderboard:problem-list"), {"status": "inactive"}).content.decode()
    assert 'title="Degenerate (found from evaluations)">degenerate</span>' in listing


def test_staff_clear_from_the_problem_page_and_non_staff_refused(client, admin_client, django_user_model, suspected):
    post = reverse("leaderboard:problem-degenerate", args=[suspected.pk])
    user = django_user_model.objects.create_user(username="bob", password="pw-bob-12345")
    client.force_login(user)
    assert client.post(post, {"action": "clear"}).status_code == 403
    response = admin_client.post(post, {"action": "clear", "note": "the shapes vary"})
    assert response.status_code == 302 and response.url == suspected.get_absolute_url()
    suspected.refresh_from_db()
    assert (suspected.degenerate, suspected.active) == (D.CLEARED, True)
    html = admin_client.get(suspected.get_absolute_url()).content.decode()
    assert "Cleared by staff" in html and "the shapes vary" in html


def test_admin_action_confirms(admin_client, suspected):
    url = reverse("admin:catalogue_problem_changelist")
    admin_client.post(url, {"action": "confirm_degenerate", "_selected_action": [suspected.pk]})
    suspected.refresh_from_db()
    assert suspected.degenerate == D.CONFIRMED and not suspected.active and suspected.degenerate_reviewed_at


def test_board_badges_the_degenerate_problem_and_counts_baseline_evaluations(client, add_sample, suspected):
    problem = ProblemFactory(level=1, problem_id=1)
    add_sample("some-llm", problem, speedup=2.0)
    BaselineFactory(problem=problem, precision=Baseline.Precision.TF32, median_ms=1.0, evaluations=7)
    BaselineFactory(problem=problem, precision=Baseline.Precision.FP32, median_ms=2.0, evaluations=5)
    html = client.get(reverse("leaderboard:index")).content.decode()
    assert "L2/99" in html and "degenerate (from data)" in html
    assert '7 <small class="muted count-word">evaluations</small>' in html and "5 <small" in html
    assert "40.00×" not in html  # the degenerate problem's kernel is not counted
    page = client.get(problem.get_absolute_url()).content.decode()
    assert "Evaluations</th>" in page
