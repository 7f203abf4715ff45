"""A figure the harness cannot stand behind (`timing.unstable`: process pairs that still disagreed after the most it
may run) stays in the record and the inspector, and leaves the rankings; records without the key still count. It
is no sign of a hack: the audit raises no flag for it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluator.audit.runtime_signals import runtime_findings
from evaluator.models import Evaluation
from evaluator.selectors.eligibility import ranked_evaluations
from tests.factories import EvaluationFactory, store_result

pytestmark = pytest.mark.django_db


def _with_timing(timing: dict | None) -> int:
    evaluation = EvaluationFactory()
    result = dict(evaluation.result)
    result["timing"] = timing
    store_result(evaluation, result)
    return evaluation.pk


def test_unstable_timing_is_not_ranked_and_stable_or_older_records_are():
    unstable = _with_timing({"unstable": True, "unstable_reason": "timing unstable: 4 process pairs' speedups ..."})
    stable = _with_timing({"unstable": False})
    older = _with_timing({"method": "cuda_event"})  # before the rule: no key
    no_timing = _with_timing(None)
    ranked = set(ranked_evaluations().values_list("pk", flat=True))
    assert unstable not in ranked
    assert {stable, older, no_timing} <= ranked


def test_unstable_timing_is_no_sign_of_a_hack():
    record = {
        "speedup": 1.2,
        "checks": [{"name": "timing_stable", "passed": False, "detail": "timing unstable: 4 process pairs ..."}],
        "timing": {"device_kind": "cuda", "unstable": True},
    }
    assert not [f for f in runtime_findings(record) if "timing_stable" in f.why]


def test_the_inspector_says_timing_unstable_and_why(client):
    reason = "timing unstable: 4 process pairs' speedups (1, 1.3, 0.8, 1.1) spread by 30.0% after 4 process pairs"
    html = _page(client, _with_timing({"method": "cuda_event", "unstable": True, "unstable_reason": reason}))
    assert "data-timing-unstable" in html and "spread by 30.0%" in html and "not ranked" in html
    assert "data-timing-unstable" not in _page(client, _with_timing({"method": "cuda_event", "unstable": False}))


def _page(client, pk: int) -> str:
    kernel_id = Evaluation.objects.get(pk=pk).kernel_id
    return client.get(reverse("inspector:kernel-detail", args=[kernel_id])).content.decode()
