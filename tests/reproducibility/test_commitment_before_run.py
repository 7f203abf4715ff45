"""The seeds' commitment binds before the run: the site draws the master seed when the evaluation is queued and
publishes its digest at once (the upload's answer, the API, the inspector), hands the master to the harness, and
refuses a finished record that commits to other seeds. Older rows, whose harness drew the master, keep working and
say so."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from evaluator.harness import seeds
from evaluator.harness.record import Record
from evaluator.models import Evaluation, SeedCommitment
from evaluator.services.evaluations import evaluation_claim, evaluation_finish
from evaluator.tasks.evaluation import evaluate_kernel
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip, record

pytestmark = pytest.mark.django_db


def _upload(client: APIClient, *kernels: tuple[int, int, int]) -> Any:
    bundle = SimpleUploadedFile("run.zip", make_zip({kernel_name(*k): demo_kernel(*k) for k in kernels}))
    return client.post(
        "/api/submissions/",
        {"bundle": bundle, "llm": "m", "problem_set": DEMO_SET, "hardware": "cpu"},
        format="multipart",
    )


@pytest.fixture
def uploader(django_user_model) -> APIClient:
    api = APIClient()
    api.force_authenticate(django_user_model.objects.create_user(username="carol", password="pw-carol-123"))
    return api


def test_the_digest_is_published_when_the_evaluation_is_queued(demo_problems, sent, uploader, client):
    answer = _upload(uploader, (1, 1, 0), (1, 2, 0))
    assert answer.status_code == 202, answer.content
    published = answer.json()["evaluations"]
    assert len(published) == 2
    for item in published:
        row = SeedCommitment.objects.get(evaluation_id=item["evaluation"])
        evaluation = row.evaluation
        # Drawn at queue time, before any worker could claim it; only the digest is out.
        assert evaluation.status == Evaluation.Status.QUEUED and evaluation.started_at is None
        assert row.published_at is not None and row.revealed_at is None
        assert item["seeds_digest"] == row.digest == seeds.digest(row.master)
        assert row.master not in answer.content.decode()
        detail = client.get(f"/api/evaluations/{evaluation.pk}/").json()
        assert detail["seeds"]["digest"] == row.digest and detail["seeds"]["fixed_before_run"] is True
        assert detail["seeds"]["master"] is None and detail["seeds_digest"] == row.digest
        listing = client.get("/api/evaluations/", {"kernel": evaluation.kernel_id}).json()["results"]
        assert [e["seeds_digest"] for e in listing] == [row.digest]
        page = client.get(f"/kernels/{evaluation.kernel_id}/").content.decode()
        assert row.digest in page and "the seeds were fixed before the kernel" in page
        assert row.master not in page + str(detail) + str(listing)


def test_the_worker_hands_the_published_master_to_the_harness(demo_problems, stand_in, sent, uploader):
    (item,) = _upload(uploader, (1, 1, 0)).json()["evaluations"]
    stand_in.script = [record()]
    evaluate_kernel.apply(args=[item["evaluation"]])
    row = SeedCommitment.objects.get(evaluation_id=item["evaluation"])
    assert stand_in.calls[0]["options"]["seeds"] == row.master  # from the database, never through the broker
    assert all(row.master not in str(call) for call in sent.calls)
    evaluation = Evaluation.objects.get(pk=item["evaluation"])
    assert (
        evaluation.status == Evaluation.Status.DONE and evaluation.result["environment"]["seeds_digest"] == row.digest
    )
    assert row.published_at < evaluation.started_at


def test_a_record_that_commits_to_other_seeds_is_refused(demo_problems, sent, uploader, client):
    """An operator (or a broken worker) runs the kernel with seeds of its own choosing and keeps the result it
    likes: the record's digest is not the one published before the run, so the evaluation gives no verdict."""
    (item,) = _upload(uploader, (1, 1, 0)).json()["evaluations"]
    evaluation = evaluation_claim(evaluation_id=item["evaluation"], worker="w")
    assert evaluation is not None
    chosen = seeds.draw()
    forged = record(speedup=9.0)
    forged["environment"]["seeds_digest"] = seeds.digest(chosen)
    forged[seeds.RECORD_KEY] = chosen
    assert evaluation_finish(evaluation=evaluation, record=Record.from_dict(forged)) is True  # handled: refused
    evaluation.refresh_from_db()
    assert evaluation.status == Evaluation.Status.FAILED and evaluation.result is None and evaluation.correct is None
    assert "refused" in evaluation.error and item["seeds_digest"] in evaluation.error
    assert SeedCommitment.objects.get(evaluation=evaluation).digest == item["seeds_digest"]  # unchanged
    assert not SeedCommitment.objects.filter(digest=seeds.digest(chosen)).exists()


def test_a_correct_record_without_a_digest_is_refused_a_failing_one_is_kept(demo_problems, sent, uploader):
    """The site's own records (a timeout, a harness that died) carry no digest and no seeded verdict; a correct
    verdict must commit to its seeds."""
    first, second = _upload(uploader, (1, 1, 0), (1, 2, 0)).json()["evaluations"]
    bare = record()
    bare["environment"].pop("seeds_digest", None)
    running = evaluation_claim(evaluation_id=first["evaluation"], worker="w")
    assert running is not None and evaluation_finish(evaluation=running, record=Record.from_dict(bare))
    assert Evaluation.objects.get(pk=first["evaluation"]).status == Evaluation.Status.FAILED
    running = evaluation_claim(evaluation_id=second["evaluation"], worker="w")
    assert running is not None
    assert evaluation_finish(
        evaluation=running, record=Record.from_dict(record(status="timeout", correct=False, speedup=None))
    )
    assert Evaluation.objects.get(pk=second["evaluation"]).result_status == "timeout"


def test_a_retry_keeps_the_seeds_published_when_it_was_first_queued(demo_problems, sent, uploader):
    from evaluator.services.reaping import evaluations_reap

    (item,) = _upload(uploader, (1, 1, 0)).json()["evaluations"]
    assert evaluation_claim(evaluation_id=item["evaluation"], worker="w") is not None
    Evaluation.objects.filter(pk=item["evaluation"]).update(heartbeat_at=timezone.now() - timezone.timedelta(hours=1))
    assert evaluations_reap().requeued == [item["evaluation"]]
    assert SeedCommitment.objects.filter(evaluation_id=item["evaluation"]).count() == 1
    assert SeedCommitment.objects.get(evaluation_id=item["evaluation"]).digest == item["seeds_digest"]


def test_an_older_row_without_a_published_digest_still_finishes_and_says_so(demo_problems, sent, client):
    """Rows queued before digests were published at queue time: the harness draws the master and the digest is
    published with the verdict; the page says what that proves."""
    from catalogue.models import Problem
    from tests.factories import KernelFactory, SubmissionFactory

    problem = Problem.objects.get(problem_set=DEMO_SET, level=1, problem_id=1)
    kernel = KernelFactory(
        problem=problem,
        submission=SubmissionFactory(hardware="cpu", problem_set=DEMO_SET, status="running", kernel_count=1),
    )
    evaluation = Evaluation.objects.create(kernel=kernel, hardware="cpu", status="running", attempts=1)
    master = seeds.draw()
    result = record()
    result["environment"]["seeds_digest"] = seeds.digest(master)
    result[seeds.RECORD_KEY] = master
    assert evaluation_finish(evaluation=evaluation, record=Record.from_dict(result))
    row = SeedCommitment.objects.get(evaluation=evaluation)
    assert row.published_at is None and row.digest == seeds.digest(master)
    assert client.get(f"/api/evaluations/{evaluation.pk}/").json()["seeds"]["fixed_before_run"] is False
    page = client.get(f"/kernels/{kernel.pk}/").content.decode()
    assert "predates digests published at queue time" in page and master not in page


@pytest.mark.slow
def test_the_real_harness_commits_to_the_published_digest(demo_problems, sent, uploader):
    """End to end on the CPU: the harness ran with the site's master, so its record carries the published digest
    (and the master it hands back is the published one)."""
    (item,) = _upload(uploader, (1, 3, 0)).json()["evaluations"]
    evaluate_kernel.apply(args=[item["evaluation"]])
    evaluation = Evaluation.objects.get(pk=item["evaluation"])
    assert evaluation.status == Evaluation.Status.DONE, evaluation.error
    assert evaluation.result["environment"]["seeds_digest"] == item["seeds_digest"]
    assert seeds.RECORD_KEY not in evaluation.result
