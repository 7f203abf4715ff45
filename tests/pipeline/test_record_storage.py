"""Every record the service stores passes the record type (evaluator/harness/record.py) first."""

from __future__ import annotations

import math
import typing

import pytest

from evaluator.harness import seeds
from evaluator.harness.record import SCHEMA_VERSION, Record
from evaluator.models import Evaluation
from evaluator.selectors.seeds import published_commitment
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
    assert svc.evaluation_finish(evaluation=ev, record=Record.from_dict(committed(ev.pk, record(speedup=2.0)))) is True
    ev.refresh_from_db()
    assert ev.result["schema_version"] == SCHEMA_VERSION
    assert Record.from_dict(ev.result) == Record.from_dict(committed(ev.pk, record(speedup=2.0)))
    assert (ev.status, ev.speedup, ev.candidate_ms) == ("done", 2.0, 0.4)


def test_a_record_of_another_shape_is_not_stored(demo_problems, sent):
    ev = claimed()
    partial = record()
    del partial["timing"]["wallclock"]
    assert svc.evaluation_record(evaluation=ev, record=partial) is None  # handled: the evaluation failed
    ev.refresh_from_db()
    assert ev.status == "failed" and ev.result is None
    assert "malformed" in ev.error and "wallclock" in ev.error


def test_the_harness_record_is_typed_once_and_stored_as_the_harness_wrote_it(demo_problems, sent):
    """The task types what the runner returned (evaluation_record) and evaluation_finish takes that Record: the
    master seed travelling beside it is kept apart, a NaN reads as null, and the stored JSON is the harness's own
    (keys of another harness version included)."""
    ev = claimed()
    master = published_commitment(evaluation_id=ev.pk).master  # the harness hands back the seed it was given
    sent_back = committed(ev.pk, record(speedup=2.0)) | {seeds.RECORD_KEY: master, "from_a_newer_harness": 1}
    sent_back["memory_ratio"] = math.nan
    typed = svc.evaluation_record(evaluation=ev, record=sent_back)
    assert isinstance(typed, Record) and typed.memory_ratio is None
    assert svc.evaluation_record(evaluation=ev, record=typed) is typed  # a Record is taken as it is
    assert svc.evaluation_finish(evaluation=ev, record=typed) is True
    ev.refresh_from_db()
    stored = {k: v for k, v in sent_back.items() if k != seeds.RECORD_KEY} | {"memory_ratio": None}
    assert ev.result == stored and master not in str(ev.result)
    assert (ev.status, ev.speedup, ev.memory_ratio) == ("done", 2.0, None)


def test_evaluation_finish_takes_a_record_not_a_dict():
    hints = typing.get_type_hints(svc.evaluation_finish)
    assert hints["record"] is Record


def test_the_soft_limit_record_has_the_harness_shape():
    timeout = svc.timeout_record(seconds=60)
    assert Record.from_dict(timeout.to_dict()).status == "timeout"
