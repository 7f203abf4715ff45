"""Degenerate problems found from the evaluations (status with evidence, out of the one
eligibility rule, staff confirm or clear), and baselines that aggregate every evaluation's paired timing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from catalogue.models import Problem
from evaluator.harness.record import Record
from evaluator.models import Baseline, Evaluation
from evaluator.selectors.eligibility import ranked_evaluations
from evaluator.services import evaluations as svc
from evaluator.services.degenerate import problem_degenerate_review
from evaluator.services.reruns import evaluation_rerun
from tests.pipeline.helpers import committed, record
from tests.pipeline.test_tasks import evals, submit

pytestmark = pytest.mark.django_db
D = Problem.Degenerate


def rec(*, constant: bool = False, tf32_ms: float = 0.5, fp32_ms: float = 0.55) -> dict:
    r = record()
    r["reference_constant"] = constant
    r["timing"]["baseline_tf32"]["median_ms"] = tf32_ms
    r["timing"]["baseline_fp32"]["median_ms"] = fp32_ms
    return r


def finish(ev: Evaluation, r: dict) -> Evaluation:
    claimed = svc.evaluation_claim(evaluation_id=ev.pk, worker="w")
    assert claimed is not None
    assert svc.evaluation_finish(evaluation=claimed, record=Record.from_dict(committed(claimed.pk, r))) is True
    claimed.refresh_from_db()
    return claimed


def finish_sequence(records: list[dict]) -> list[Evaluation]:
    """One evaluation of a kernel of demo problem L1/1 per record: the first, then re-runs of the last one."""
    (ev,) = evals(submit((1, 1, 0)))
    done = [finish(ev, records[0])]
    for r in records[1:]:
        done.append(finish(evaluation_rerun(evaluation_id=done[-1].pk), r))
    return done


# --- 3. Degenerate problems found from the data ---------------------------------------------------------------


def test_constant_reference_in_evaluations_marks_the_problem_degenerate_with_evidence(demo_problems, sent):
    a, b = evals(submit((1, 1, 0), (1, 1, 1)))
    a = finish(a, rec(constant=True))
    problem = Problem.objects.get(pk=a.kernel.problem_id)
    assert problem.degenerate == D.NO and problem.active  # one evaluation is not enough evidence
    assert ranked_evaluations().filter(pk=a.pk).exists()
    b = finish(b, rec(constant=True))
    problem.refresh_from_db()
    assert problem.degenerate == D.SUSPECTED and not problem.active
    ev = problem.degenerate_evidence
    assert (ev["evaluation_ids"], ev["count"], ev["varying"]) == ([a.pk, b.pk], 2, 0)
    assert ev["first_at"] and ev["last_at"] and ev["found_at"] and ev["hardware"] == ["cpu"]
    assert "constant" in problem.inactive_reason and "2 evaluations" in problem.inactive_reason
    assert not ranked_evaluations().filter(kernel__problem=problem).exists()


def test_varying_reference_outvotes_and_nothing_is_marked(demo_problems, sent):
    a, b = evals(submit((1, 1, 0), (1, 1, 1)))
    finish(a, rec(constant=True))
    finish(b, rec(constant=False))
    problem = Problem.objects.get(pk=a.kernel.problem_id)
    assert problem.degenerate == D.NO and problem.active


def test_eligibility_excludes_degenerate_even_if_active(demo_problems, sent):
    (a,) = evals(submit((1, 1, 0)))
    a = finish(a, rec())
    assert ranked_evaluations().filter(pk=a.pk).exists()
    Problem.objects.filter(pk=a.kernel.problem_id).update(degenerate=D.SUSPECTED)  # active stays True
    assert not ranked_evaluations().filter(pk=a.pk).exists()


def test_staff_clear_stays_cleared_until_new_evidence_and_confirm_sticks(demo_problems, sent, admin_user):
    done = finish_sequence([rec(constant=True)] * 2)
    problem = Problem.objects.get(pk=done[0].kernel.problem_id)
    assert problem.degenerate == D.SUSPECTED
    problem = problem_degenerate_review(problem=problem, action="clear", user=admin_user, note="shape differs")
    assert (problem.degenerate, problem.active, problem.inactive_reason) == (D.CLEARED, True, "")
    assert problem.degenerate_reviewed_by == admin_user and problem.degenerate_evidence["note"] == "shape differs"
    call_command("find_degenerate_problems", stdout=StringIO())  # the same evidence again: stays cleared
    problem.refresh_from_db()
    assert problem.degenerate == D.CLEARED and problem.active
    # A new evaluation that finds it constant re-opens the question.
    new = evaluation_rerun(evaluation_id=done[1].pk)
    new = finish(new, rec(constant=True))
    problem.refresh_from_db()
    assert problem.degenerate == D.SUSPECTED and not problem.active
    assert new.pk in problem.degenerate_evidence["evaluation_ids"]
    problem = problem_degenerate_review(problem=problem, action="confirm", user=admin_user)
    assert problem.degenerate == D.CONFIRMED and not problem.active
    with pytest.raises(ValueError):
        problem_degenerate_review(problem=problem, action="maybe")


def test_known_degenerate_list_is_data_on_import(demo_problems):
    from leaderboard.services.problems import ProblemFile, problems_import

    source = Problem.objects.filter(problem_set="demo").first().source
    f = ProblemFile(2, 80, "Gemm_Max_Subtract_GELU", "80_Gemm_Max_Subtract_GELU.py", source + "\n# 80\n", "x")
    problems_import(files=[f], problem_set="other")
    p = Problem.objects.get(problem_set="other", level=2, problem_id=80)
    assert (p.degenerate, p.active) == (D.CONFIRMED, False)
    assert p.degenerate_evidence["reason"] == p.inactive_reason and "always zero" in p.inactive_reason


# --- 6a. Baselines: a robust aggregate over evaluations -------------------------------------------------------


def test_one_noisy_evaluation_does_not_fix_the_baseline(demo_problems, sent):
    evs = finish_sequence(  # the noisy one comes first
        [rec(tf32_ms=0.5, fp32_ms=50.0), rec(tf32_ms=0.52, fp32_ms=0.6), rec(tf32_ms=0.48, fp32_ms=0.62)]
    )
    problem_id = evs[0].kernel.problem_id
    fp32 = Baseline.objects.get(problem_id=problem_id, precision="fp32")
    tf32 = Baseline.objects.get(problem_id=problem_id, precision="tf32")
    assert (fp32.median_ms, fp32.min_ms, fp32.max_ms, fp32.evaluations) == (0.62, 0.6, 50.0, 3)
    assert (tf32.median_ms, tf32.min_ms, tf32.max_ms, tf32.evaluations) == (0.5, 0.48, 0.52, 3)
    assert set(tf32.stats["samples"]) == {str(e.pk) for e in evs}
    assert Baseline.objects.count() == 2


def test_a_finished_evaluation_counts_once_and_sweeps_still_import(demo_problems, sent, tmp_path):
    import json

    (a,) = evals(submit((1, 1, 0)))
    a = finish(a, rec(tf32_ms=0.5))
    problem = a.kernel.problem
    b = Baseline.objects.get(problem=problem, precision="tf32")
    assert (b.median_ms, b.evaluations) == (0.5, 1)
    sweep = tmp_path / "sweep.jsonl"
    rows = [
        {"summary": True, "environment": {"torch": "2.13.0"}},
        {"level": 1, "problem_id": 1, "sha256": problem.sha256,
         "precisions": {"tf32": {"median_ms": 0.7, "iqr_ms": 0.01, "calls": 100}}},
    ]  # fmt: skip
    sweep.write_text("\n".join(json.dumps(r) for r in rows))
    for _ in range(2):  # re-import replaces the sweep's sample rather than adding one
        call_command("import_baselines", str(sweep), hardware="cpu", problem_set="demo", stdout=StringIO())
    b.refresh_from_db()
    assert (b.median_ms, b.min_ms, b.max_ms, b.evaluations) == (pytest.approx(0.6), 0.5, 0.7, 1)
    assert set(b.stats["samples"]) == {str(a.pk), "sweep"}


def test_the_problem_api_says_degenerate_with_its_evidence(demo_problems, sent, client):
    done = finish_sequence([rec(constant=True)] * 2)
    pk = done[0].kernel.problem_id
    listed = client.get("/api/problems/", {"level": 1, "problem_set": "demo"}).json()["results"]
    assert {p["id"]: p["degenerate"] for p in listed}[pk] == "suspected"
    detail = client.get(f"/api/problems/{pk}/").json()
    assert detail["degenerate_evidence"]["evaluation_ids"] == [e.pk for e in done] and detail["active"] is False
