"""The inspector's figures agree with each other and say what they are: a speedup that does not count says so
before the figure."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import ProblemFactory
from tests.pipeline.helpers import record

pytestmark = pytest.mark.django_db


def inspector(client, evaluation) -> str:
    return client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()


def speedup_card(html: str) -> str:
    return html.split('id="speedup-card"')[1].split("</div>")[0]


def test_a_failed_kernel_says_not_counted_before_its_figure(client, add_sample):
    failed = record(speedup=0.343)
    failed["correct"] = False
    evaluation = add_sample(
        "wrong", ProblemFactory(), speedup=0.343, correct=False, result=failed, speedup_ci_low=0.3, speedup_ci_high=0.4
    )
    card = speedup_card(inspector(client, evaluation))
    assert card.index("Not counted") < card.index("0.343×")  # the verdict on the figure first, then the figure
    assert "did not pass the verified gate" in card
    assert '<strong class="speedup">' not in card  # never bold, as a counted figure is


def test_a_counted_kernel_has_no_not_counted_note(client, add_sample):
    evaluation = add_sample("right", ProblemFactory(), speedup=1.25, result=record(speedup=1.25))
    card = speedup_card(inspector(client, evaluation))
    assert "Not counted" not in card and '<strong class="speedup">1.25×</strong>' in card
