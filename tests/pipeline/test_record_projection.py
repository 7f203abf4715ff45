"""One projection of a result record onto the Evaluation's columns and DistributionResult rows
(evaluator/record_projection.py): the service, the synthetic demo data and the loader of exported GPU runs all store
what it gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.models import Submission
from evaluator.harness.record import Record
from evaluator.models import Evaluation
from evaluator.record_projection import distribution_rows, evaluation_columns
from evaluator.services import evaluations as svc
from tests.pipeline.helpers import REPO_ROOT, committed, record
from tests.pipeline.test_tasks import evals, submit

pytestmark = pytest.mark.django_db

COLUMNS = tuple(evaluation_columns(Record()))
ROW_FIELDS = tuple(distribution_rows(Record())[0])


def columns(evaluation: Evaluation) -> dict:
    return {name: getattr(evaluation, name) for name in COLUMNS}


def rows(evaluation: Evaluation) -> list[dict]:
    return list(evaluation.distributions.order_by("name").values(*ROW_FIELDS))


def claimed() -> Evaluation:
    (ev,) = evals(submit((1, 1, 0)))
    found = svc.evaluation_claim(evaluation_id=ev.pk, worker="w")
    assert found is not None
    return found


def finish(evaluation: Evaluation, result: dict) -> Evaluation:
    """Store `result` through the service on `evaluation` (put back to running, uncounted: one row serves many)."""
    Evaluation.objects.filter(pk=evaluation.pk).update(status=Evaluation.Status.RUNNING)
    Submission.objects.filter(pk=evaluation.kernel.submission_id).update(evaluated_count=0, correct_count=0)
    assert (
        svc.evaluation_finish(evaluation=evaluation, record=Record.from_dict(committed(evaluation.pk, result))) is True
    )
    evaluation.refresh_from_db()
    return evaluation


def test_the_service_stores_the_projection_of_the_record(demo_problems, sent):
    given = record(speedup=2.0)
    given["speedup_fp32"] = -1.0  # not a speedup: null in its column
    given["error"] = "x" * 5000
    ev = finish(claimed(), given)
    assert columns(ev) == evaluation_columns(Record.from_dict(given))
    assert ev.speedup_fp32 is None and len(ev.error) == 4000 and ev.speedup == 2.0
    assert rows(ev) == distribution_rows(Record.from_dict(given))


def test_seeded_demo_evaluations_hold_what_the_service_stores_for_their_records(demo_problems, sent, problems_jsonl):
    call_command("seed_demo_results", llms=2, problems=8, samples=2, problems_jsonl=problems_jsonl, seed=4)
    seeded = Evaluation.objects.filter(hardware="synthetic-h200").order_by("pk")
    one_each = {ev.result_status: ev for ev in seeded}
    assert {"ok", "compile_error"} <= set(one_each)
    target = claimed()
    for status, ev in one_each.items():
        served = finish(target, ev.result)
        assert columns(served) == columns(ev), status
        assert rows(served) == rows(ev), status
    for ev in seeded:
        assert columns(ev) == evaluation_columns(Record.from_dict(ev.result))


def test_a_loaded_gpu_run_takes_its_columns_from_its_records(tmp_path):
    rows_in = json.loads((REPO_ROOT / "leaderboard" / "fixtures" / "h200_e2e.json").read_text())
    for row in rows_in:  # exported before these models moved to the catalogue app
        row["model"] = row["model"].replace("leaderboard.", "catalogue.")
    done = [r for r in rows_in if r["model"] == "evaluator.evaluation" and r["fields"]["result"] is not None]
    assert done
    done[0]["fields"]["speedup"] = 999.0  # a column that disagrees with its record
    fixture = tmp_path / "run.json"
    fixture.write_text(json.dumps(rows_in))
    call_command("load_gpu_results", str(fixture))
    loaded = list(Evaluation.objects.filter(hardware="h200", result__isnull=False))
    assert len(loaded) == len(done)
    for ev in loaded:
        assert columns(ev) == evaluation_columns(Record.from_stored(ev.result))
    assert 999.0 not in {ev.speedup for ev in loaded}


def test_the_projection_is_the_one_module_that_names_the_columns():
    """No other writer of evaluations spells the record -> column copy out again."""
    writers = [
        "evaluator/services/evaluations.py",
        "leaderboard/management/commands/seed_demo_results.py",
        "leaderboard/management/commands/load_gpu_results.py",
    ]
    for path in writers:
        text = Path(REPO_ROOT / path).read_text()
        assert "evaluation_columns(" in text, path
        assert "speedup_ci_low=" not in text and "candidate_ms=" not in text, path
