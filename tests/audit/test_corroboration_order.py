"""Corroboration does not depend on which audit finishes first: static flags stored after the runtime
flags are corroborated by them, as runtime flags stored after static ones are."""

from __future__ import annotations

import pytest

from evaluator.models import AuditFlag
from evaluator.services.audit import kernel_audit_runtime, kernel_audit_static
from tests.audit.conftest import CORPUS
from tests.factories import EvaluationFactory, KernelFactory

pytestmark = pytest.mark.django_db

RELU_GUARD = (CORPUS / "hack" / "relu_shape_guard.py").read_text()
FAILED_CHECK = {
    "status": "ok", "correct": True, "speedup": 1.4,
    "checks": [{"name": "wallclock_crosscheck", "passed": False, "detail": "event 0.1 ms vs synced 2.3 ms"}],
}  # fmt: skip


@pytest.mark.parametrize("static_first", [True, False], ids=["static-then-runtime", "runtime-then-static"])
def test_a_static_flag_is_corroborated_by_a_runtime_signal_in_either_order(static_first: bool) -> None:
    evaluation = EvaluationFactory(kernel=KernelFactory(source=RELU_GUARD), result=FAILED_CHECK, speedup=1.4)
    steps = [lambda: kernel_audit_static(kernel_id=evaluation.kernel_id),
             lambda: kernel_audit_runtime(evaluation_id=evaluation.pk, enqueue_judges=False)]  # fmt: skip
    for step in steps if static_first else reversed(steps):
        step()
    static = AuditFlag.objects.get(kernel=evaluation.kernel, source="rule", source_name="literal_shape_guard")
    assert AuditFlag.objects.filter(kernel=evaluation.kernel, source="runtime").exclude(verdict="info").exists()
    assert static.review_state == AuditFlag.Review.CORROBORATED


def test_the_flags_returned_by_the_static_audit_show_their_corroboration() -> None:
    evaluation = EvaluationFactory(kernel=KernelFactory(source=RELU_GUARD), result=FAILED_CHECK, speedup=1.4)
    kernel_audit_runtime(evaluation_id=evaluation.pk, enqueue_judges=False)
    flags = {f.source_name: f for f in kernel_audit_static(kernel_id=evaluation.kernel_id)}
    assert flags["literal_shape_guard"].review_state == AuditFlag.Review.CORROBORATED
