"""The synthetic dataset generator: sizes, labelling, and what the board makes of it."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from catalogue.models import LLM, Kernel, Submission
from evaluator.harness.protocol import validate_result
from evaluator.models import AuditFlag, Baseline, DistributionResult, Evaluation
from leaderboard.selectors.ranking import compute_leaderboard

pytestmark = pytest.mark.django_db


def test_seed_creates_labelled_synthetic_results(problems_jsonl, client):
    call_command("seed_demo_results", llms=3, problems=12, samples=2, problems_jsonl=problems_jsonl, seed=1)
    llms = list(LLM.objects.all())
    assert len(llms) == 3 and all(llm.name.startswith("synthetic-") for llm in llms)
    assert all("SYNTHETIC" in llm.notes for llm in llms)
    assert Submission.objects.filter(bundle_name="synthetic-demo").count() == 3
    assert Kernel.objects.count() == Evaluation.objects.count()
    evaluations = Evaluation.objects.filter(hardware="synthetic-h200")
    assert evaluations.count() == 3 * 12 * 2
    assert all(e.result["synthetic"] is True for e in evaluations)
    for e in evaluations:  # the shape the harness writes (no record shape of its own)
        validate_result(e.result)
    assert DistributionResult.objects.exists()
    assert Baseline.objects.filter(hardware="synthetic-h200").count() == 3 * 12  # tf32, fp32, compile
    # Correctness of the stored columns agrees with the per-distribution rows.
    for e in evaluations.filter(correct=True)[:20]:
        assert all(d.passed or d.skipped for d in e.distributions.all())
    data = compute_leaderboard(hardware="synthetic-h200", problem_set="kernelbench-main")
    assert {r.name for r in data.rows[None] if not r.is_baseline} == {llm.name for llm in llms}
    assert len(data.inactive) == 3  # L2 23, 80, 83
    html = client.get("/", {"hardware": "synthetic-h200"}).content.decode()
    assert "Synthetic demo data." in html


def test_seed_refuses_to_duplicate_and_clears(problems_jsonl):
    call_command("seed_demo_results", llms=2, problems=5, samples=1, problems_jsonl=problems_jsonl)
    with pytest.raises(CommandError, match="--clear"):
        call_command("seed_demo_results", llms=2, problems=5, samples=1, problems_jsonl=problems_jsonl)
    call_command("seed_demo_results", llms=2, problems=5, samples=1, problems_jsonl=problems_jsonl, clear=True)
    assert LLM.objects.count() == 2
    assert Submission.objects.count() == 2


def test_seed_hacks_have_evidence_on_real_lines(problems_jsonl):
    call_command("seed_demo_results", llms=4, problems=60, samples=3, problems_jsonl=problems_jsonl, seed=3)
    flags = list(AuditFlag.objects.select_related("kernel"))
    assert flags, "expected a few synthetic audit flags"
    for flag in flags:
        lines = flag.kernel.source.splitlines()
        for item in flag.evidence:
            assert item["quote"] in lines[item["lines"][0] - 1]


def test_seed_refuses_real_looking_hardware(problems_jsonl):
    with pytest.raises(CommandError, match="synthetic"):
        call_command("seed_demo_results", hardware="h200", problems_jsonl=problems_jsonl)
