"""A problem's work (FLOPs, bytes and their parts) is the same whether `manage.py count_flops` counted it or the first
evaluation's record brought it: the record's speed of light carries the reference worker's whole count
(evaluator/services/work.py). Before, the record path looked up keys the record never had and stored less."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogue.models import Problem
from evaluator.harness.orchestrator.roofline import speed_of_light
from evaluator.harness.record import Record
from evaluator.harness.workers.flops import count_source
from evaluator.services.work import COUNT_KEYS, problem_count_work, problem_work_from_record
from tests.factories import ProblemFactory

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "leaderboard" / "demo" / "problems"


@pytest.mark.parametrize("name", ["level1/2_Matmul.py", "level2/1_Linear_BatchNorm_GELU.py"])
def test_a_record_brings_the_same_work_as_count_flops(name):
    source = (DEMO / name).read_text()
    by_command, by_record = ProblemFactory(source=source), ProblemFactory(source=source)
    counts = problem_count_work(problem=by_command)
    assert counts is not None
    # The record as the harness prints it: the orchestrator's bound over the reference worker's count.
    record = Record.from_dict(
        Record(status="ok", speed_of_light=speed_of_light(count_source(source), "NVIDIA H200", 0.5)).to_dict(),
        closed=True,
    )
    problem_work_from_record(problem_id=by_record.pk, speed_of_light=record.speed_of_light)
    by_command.refresh_from_db()
    by_record.refresh_from_db()
    assert (by_record.flops, by_record.bytes_moved) == (by_command.flops, by_command.bytes_moved)
    assert by_record.work_counts == by_command.work_counts
    assert set(by_command.work_counts) == set(COUNT_KEYS)  # every part, from either source
    parts = by_record.work_counts["input_bytes"] + by_record.work_counts["output_bytes"]
    assert parts + by_record.work_counts["param_bytes"] == by_record.bytes_moved


def test_an_older_record_brings_what_it_holds():
    """Records before schema 4 carry the FLOPs' parts only: the problem gets those, nothing made up."""
    problem = ProblemFactory()
    old = Record.from_stored({"speed_of_light": {"flops": 30, "bytes": 64, "matrix_flops": 20, "vector_flops": 10}})
    problem_work_from_record(problem_id=problem.pk, speed_of_light=old.speed_of_light)
    stored = Problem.objects.get(pk=problem.pk)
    assert (stored.flops, stored.bytes_moved, stored.work_counts) == (30, 64, {"matrix_flops": 20, "vector_flops": 10})
