"""Commit, then reveal, then reproduce: a demo kernel is evaluated by the real harness on the CPU, its master seed is
kept apart from the published record, revealed once due, and `manage.py reproduce` re-runs the verdict with it
and gets the same per-distribution figures."""

from __future__ import annotations

import hashlib
import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.models import Problem
from evaluator.harness import seeds
from evaluator.models import Evaluation, SeedCommitment
from evaluator.selectors.seeds import revealed_seeds
from evaluator.services.seeds import reveal_after, seeds_reveal_due
from evaluator.tasks.evaluation import evaluate_kernel
from tests.factories import KernelFactory, SubmissionFactory
from tests.pipeline.helpers import demo_kernel

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _queued(demo_problems, level: int, problem_id: int, sample: int) -> Evaluation:
    problem = Problem.objects.get(problem_set="demo", level=level, problem_id=problem_id)
    source = demo_kernel(level, problem_id, sample)
    kernel = KernelFactory(
        problem=problem,
        source=source,
        sample=sample,
        submission=SubmissionFactory(hardware="cpu", problem_set="demo", status="received", kernel_count=1),
    )
    return Evaluation.objects.create(kernel=kernel, hardware="cpu")


def test_revealed_seeds_reproduce_the_verdict(demo_problems):
    # The shape-guard hack (L1/1 sample 1): passes D1-D3, fails D4, so both outcomes must come back the same.
    evaluation = _queued(demo_problems, 1, 1, 1)
    evaluate_kernel.apply(args=[evaluation.pk])
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.DONE and evaluation.correct is False, evaluation.error
    assert [d.passed for d in evaluation.distributions.order_by("name")] == [True, True, True, False]

    # Committed: the published record holds the digest, never the master seed.
    commitment = SeedCommitment.objects.get(evaluation=evaluation)
    assert seeds.RECORD_KEY not in evaluation.result and commitment.master not in str(evaluation.result)
    digest = evaluation.result["environment"]["seeds_digest"]
    assert digest == hashlib.sha256(commitment.master.encode()).hexdigest() == commitment.digest
    assert revealed_seeds(evaluation_id=evaluation.pk) is None
    with pytest.raises(CommandError, match="not revealed yet"):
        call_command("reproduce", evaluation.pk)

    # Not due before the published delay; due after it.
    assert seeds_reveal_due(now=evaluation.finished_at + reveal_after() - timedelta(minutes=1)) == 0
    assert seeds_reveal_due(now=evaluation.finished_at + reveal_after()) == 1
    shown = revealed_seeds(evaluation_id=evaluation.pk)
    assert shown is not None and shown.master == commitment.master
    assert f"manage.py reproduce {evaluation.pk}" in shown.command

    out = io.StringIO()
    call_command("reproduce", evaluation.pk, "--strict", stdout=out)
    text = out.getvalue()
    assert "identical: every per-distribution pass/fail and error figure is the same" in text, text
    assert "D4: FAIL" in text and "D1: pass" in text


def test_a_reader_reruns_a_dataset_row_with_the_harness_alone(tmp_path):
    """README, "How a reader checks a verdict": a revealed row of the shipped sample, re-run with its own sources,
    its master seed and no database, gives the same figures."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from evaluator.dataset import SAMPLE_PATH

    row = next(r for r in map(json.loads, SAMPLE_PATH.read_text().splitlines()) if r["seeds"]["master"])
    assert seeds.digest(row["seeds"]["master"]) == row["environment"]["seeds_digest"]
    (tmp_path / "problem.py").write_text(row["problem"]["source"])
    (tmp_path / "kernel.py").write_text(row["kernel"]["source"])
    (tmp_path / "row.json").write_text(json.dumps(row))
    command = [sys.executable, "-m", "evaluator.harness", str(tmp_path / "problem.py"), str(tmp_path / "kernel.py")]
    command += ["--seeds", row["seeds"]["master"], "--compare", str(tmp_path / "row.json")]
    command += ["--quick"] if row["environment"]["options"]["quick"] else []
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "identical: every per-distribution pass/fail and error figure is the same" in done.stdout, done.stdout


def _rows() -> list[dict]:
    import json

    from evaluator.dataset import SAMPLE_PATH

    return [json.loads(line) for line in SAMPLE_PATH.read_text().splitlines()]


@pytest.mark.parametrize("tamper", ["edited verdict", "other master", "swapped kernel"])
def test_the_harness_compare_catches_each_tamper_and_exits_non_zero(tamper, tmp_path):
    """`python -m evaluator.harness ... --compare ROW.json`: a dataset row whose shown verdict was edited, a master
    seed that is not the row's published digest's, a kernel file that is not the one evaluated: each is named, and
    the command exits 1 (without --strict)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    honest, row = _rows()  # a correct ReLU and the revealed, failing one
    kernel, master = row["kernel"]["source"], row["seeds"]["master"]
    if tamper == "edited verdict":
        row["verdict"]["correct"] = True
        expected = "a stored column was edited after the run"
    elif tamper == "other master":
        master = seeds.draw()
        expected = "the stored master seed does not match the digest published before the run"
    else:
        kernel = honest["kernel"]["source"]
        expected = "a swapped kernel source"
    (tmp_path / "problem.py").write_text(row["problem"]["source"])
    (tmp_path / "kernel.py").write_text(kernel)
    (tmp_path / "row.json").write_text(json.dumps(row))
    command = [sys.executable, "-m", "evaluator.harness", str(tmp_path / "problem.py"), str(tmp_path / "kernel.py")]
    command += ["--seeds", master, "--compare", str(tmp_path / "row.json"), "--quick"]
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=root)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert expected in done.stdout, done.stdout
