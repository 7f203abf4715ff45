"""Every record the service stores passes the record type (evaluator/harness/record.py) first."""

from __future__ import annotations

import pytest

from evaluator.harness.record import SCHEMA_VERSION, Record
from evaluator.models import Evaluation
from evaluator.services import evaluations as svc
from tests.pipeline.helpers import committed, record
from tests.pipeline.test_tasks import evals, submit

pytestmark = pytest.mark.django_db


def claimed() -> Evaluation:
    (ev,) = evals(submit((1, 1, 0)))
    found = svc.evaluation_claim(evaluation_id=ev.pk, worker="w")
    assert found is not None
    return found


def test_a_valid_record_is_stored_versioned_and_reads_back_typed(demo_problems, sent):
    ev = claimed()
    assert svc.evaluation_finish(evaluation=ev, record=committed(ev.pk, record(speedup=2.0))) is True
    ev.refresh_from_db()
    assert ev.result["schema_version"] == SCHEMA_VERSION
    assert Record.from_dict(ev.result) == Record.from_dict(committed(ev.pk, record(speedup=2.0)))
    assert (ev.status, ev.speedup, ev.candidate_ms) == ("done", 2.0, 0.4)


def test_a_record_of_another_shape_is_not_stored(demo_problems, sent):
    ev = claimed()
    partial = record()
    del partial["timing"]["wallclock"]
    assert svc.evaluation_finish(evaluation=ev, record=partial) is True  # handled: the evaluation failed
    ev.refresh_from_db()
    assert ev.status == "failed" and ev.result is None
    assert "malformed" in ev.error and "wallclock" in ev.error


def test_the_soft_limit_record_has_the_harness_shape():
    assert Record.from_dict(svc.timeout_record(seconds=60)).status == "timeout"
