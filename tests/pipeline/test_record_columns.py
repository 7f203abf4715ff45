"""The columns that queries filter and rank on in place of JSON paths (timing stability, the speed-of-light fraction,
the stack's parts): the projection fills them, the migration fills stored rows of every record age the same way, and
the rankings, the board's stack filter and the chart read them."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from evaluator.harness.record import SCHEMA_VERSION, Record
from evaluator.models import Evaluation
from evaluator.record_projection import evaluation_columns
from evaluator.selectors.eligibility import ranked_evaluations
from evaluator.selectors.stacks import board_measured, current_stack, evaluation_stack, stack_q, stacks
from tests.factories import RECORD_ONLY_COLUMNS, EvaluationFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("evaluator.migrations.0008_evaluation_record_columns")

# A record stored before schema_version existed (version 0): no speed of light, no `timing.unstable`, a sparse
# environment, and a few malformed values a stored record of any age may hold.
OLD_RECORD = {
    "harness_version": "0.9.0",
    "status": "ok",
    "correct": True,
    "standard_correct": True,
    "distributions": [{"name": n, "passed": True} for n in ("D1", "D2", "D3", "D4")],
    "reference_constant": False,
    "speedup": 1.4,
    "timing": {"method": "cuda_event", "candidate": {"median_ms": 0.2}},
    "memory": {},
    "checks": [],
    "error": "",
    "phases": {},
    "environment": {"torch": "2.4.0", "cuda": 12.4, "device_name": "NVIDIA H100 80GB HBM3"},
}
NEW_RECORD = Record(status="ok", correct=True).to_dict() | {
    "timing": {**Record().timing.to_dict(), "unstable": True, "unstable_reason": "pairs disagreed"},
    "speed_of_light": {"flops": 10, "bytes": 20, "bound_ms": 0.01, "fraction": 0.25},
    "environment": {"torch": "2.13.0", "cuda": "13.0", "driver": "580.1", "device_name": "NVIDIA H200"},
}
ODD_RECORDS = [
    {"speed_of_light": {"fraction": -1.0}, "timing": {"unstable": "yes"}},  # not a fraction; not a flag
    {"speed_of_light": {"fraction": "0.5"}, "environment": {"torch": "x" * 300, "cuda": None}},
    {"speed_of_light": None, "timing": None, "environment": None},
    {},
]


def _stored(result: dict) -> Evaluation:
    """A row whose record-only columns say nothing yet (stored before the migration), holding `result`."""
    evaluation = EvaluationFactory()
    Evaluation.objects.filter(pk=evaluation.pk).update(
        result=result,
        timing_unstable=False,
        speed_of_light_fraction=None,
        env_torch="",
        env_cuda="",
        env_driver="",
        env_device_name="",
    )
    return evaluation


def _record_columns(evaluation: Evaluation) -> dict:
    evaluation.refresh_from_db()
    return {name: getattr(evaluation, name) for name in RECORD_ONLY_COLUMNS}


@pytest.mark.parametrize("result", [OLD_RECORD, NEW_RECORD, *ODD_RECORDS])
def test_the_migration_fills_stored_rows_as_the_projection_does(result):
    evaluation = _stored(result)
    migration.backfill(apps, None)
    projected = evaluation_columns(Record.from_stored(result))
    assert _record_columns(evaluation) == {name: projected[name] for name in RECORD_ONLY_COLUMNS}


def test_the_columns_of_an_old_and_a_new_record():
    assert "schema_version" not in OLD_RECORD  # read as version 0, then upgraded
    old = evaluation_columns(Record.from_stored(OLD_RECORD))
    assert (old["timing_unstable"], old["speed_of_light_fraction"]) == (False, None)
    assert (old["env_torch"], old["env_cuda"], old["env_device_name"]) == ("2.4.0", "", "NVIDIA H100 80GB HBM3")
    new = evaluation_columns(Record.from_dict(NEW_RECORD))
    assert Record.from_dict(NEW_RECORD).schema_version == SCHEMA_VERSION
    assert (new["timing_unstable"], new["speed_of_light_fraction"], new["env_driver"]) == (True, 0.25, "580.1")


def test_queries_read_the_columns_for_rows_of_every_age():
    old, new = _stored(OLD_RECORD), _stored(NEW_RECORD)
    migration.backfill(apps, None)
    old.refresh_from_db()
    new.refresh_from_db()
    ranked = set(ranked_evaluations().values_list("pk", flat=True))
    assert old.pk in ranked and new.pk not in ranked  # an old record predates the rule: it counts
    new_label = "torch 2.13.0 / CUDA 13.0 / driver 580.1 / GPU NVIDIA H200"
    assert evaluation_stack(old) == "torch 2.4.0 / GPU NVIDIA H100 80GB HBM3"
    assert evaluation_stack(new) == new_label
    assert set(stacks()) == {evaluation_stack(old), new_label}
    assert current_stack(hardware=new.hardware) in {evaluation_stack(old), new_label}
    assert list(Evaluation.objects.filter(stack_q(new_label)).values_list("pk", flat=True)) == [new.pk]
    assert list(Evaluation.objects.filter(stack_q(evaluation_stack(old))).values_list("pk", flat=True)) == [old.pk]
    measured = board_measured(hardware=new.hardware, problem_set=new.kernel.problem.problem_set)
    assert dict(measured.stacks) == {evaluation_stack(old): 1, new_label: 1}
