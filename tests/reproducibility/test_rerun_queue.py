"""Re-runs live on their own queue, below uploads: every sender (the queueing, a retry, the reaper) puts a
re-evaluation on eval-<hardware>-rerun, a re-run taken while an upload waits goes back to its queue, a champion
whose re-run waits (even with no worker) stays on the board, and the API shows the history and reads per stack."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluator.harness.record import Record
from evaluator.models import Evaluation
from evaluator.selectors.eligibility import ranked_evaluations
from evaluator.services.queues import evaluation_queue, queues_for
from evaluator.services.reruns import champions_rerun, rerun_should_wait
from evaluator.tasks.evaluation import evaluate_kernel
from leaderboard.selectors.ranking import leaderboard_cache_clear
from tests.factories import (
    EvaluationFactory,
    KernelFactory,
    LLMFactory,
    ProblemFactory,
    SubmissionFactory,
    record_only_columns,
)
from tests.pipeline.helpers import record

pytestmark = pytest.mark.django_db

OLD = {"torch": "2.13.0", "cuda": "13.0", "device_name": "NVIDIA H200"}
NEW = OLD | {"torch": "2.14.0"}


def _verdict(env: dict, *, llm_name: str, speedup: float = 2.0, hardware: str = "h200") -> Evaluation:
    kernel = KernelFactory(
        problem=ProblemFactory(),
        submission=SubmissionFactory(
            llm=LLMFactory(name=llm_name), hardware=hardware, kernel_count=1, evaluated_count=1, correct_count=1
        ),
    )
    result = Record(status="ok", correct=True, standard_correct=True, speedup=speedup).to_dict()
    result["environment"].update(env)
    return EvaluationFactory(
        kernel=kernel,
        hardware=hardware,
        speedup=speedup,
        result=result,
        harness_seconds=10.0,
        finished_at=timezone.now() - timedelta(hours=1),
    )


@pytest.fixture
def rerun_waiting(sent, django_capture_on_commit_callbacks) -> tuple[Evaluation, Evaluation]:
    """A champion measured on torch 2.13 and its re-run queued for 2.14 (the workers' stack), with no worker."""
    champion = _verdict(OLD, llm_name="champion-llm", speedup=3.0)
    _verdict(NEW, llm_name="other-llm", speedup=1.2)
    with django_capture_on_commit_callbacks(execute=True):
        [plan] = champions_rerun(hardware="h200")
    (rerun_id,) = plan.queued
    return champion, Evaluation.objects.get(pk=rerun_id)


def test_every_sender_puts_a_rerun_on_its_own_queue(rerun_waiting, sent):
    champion, rerun = rerun_waiting
    assert [call["queue"] for call in sent.calls] == ["eval-h200-rerun"]
    assert evaluation_queue(rerun) == "eval-h200-rerun" and evaluation_queue(champion) == "eval-h200"
    assert queues_for("h200") == ["eval-h200", "eval-h200-rerun"]  # what a worker of that hardware consumes


def test_a_champion_waiting_for_its_rerun_stays_on_the_board(rerun_waiting, client):
    """No worker takes the re-run (it stays queued): the champion's verdict still stands, on the board and in the
    API, until its re-run has one."""
    champion, rerun = rerun_waiting
    assert rerun.status == Evaluation.Status.QUEUED and not Evaluation.objects.get(pk=champion.pk).is_current
    assert ranked_evaluations(hardware="h200").filter(pk=champion.pk).exists()
    leaderboard_cache_clear()
    rows = client.get("/api/leaderboard/", {"hardware": "h200", "problem_set": "kernelbench-main"}).json()["rows"]
    llm_row = next(r for r in rows if r["name"] == "champion-llm")
    assert llm_row["correct"] == 1 and llm_row["speedup"] == pytest.approx(3.0)
    # Once the re-run has its verdict, it stands instead.
    done = Record(status="ok", correct=True, standard_correct=True, speedup=2.5).to_dict()
    done["environment"].update(NEW)
    Evaluation.objects.filter(pk=rerun.pk).update(
        status=Evaluation.Status.DONE,
        result=done,
        **record_only_columns(done),
        correct=True,
        speedup=2.5,
        finished_at=timezone.now(),
    )
    assert list(ranked_evaluations(hardware="h200").filter(kernel_id=champion.kernel_id)) == [rerun]


def test_the_api_lists_a_kernels_verdicts_with_their_stacks_and_reads_the_board_per_stack(rerun_waiting, client):
    champion, rerun = rerun_waiting
    listing = client.get("/api/evaluations/", {"kernel": champion.kernel_id}).json()["results"]
    by_id = {e["id"]: e for e in listing}
    assert by_id[champion.pk]["stack"] == "torch 2.13.0 / CUDA 13.0 / GPU NVIDIA H200"
    assert by_id[champion.pk]["re_evaluation"] is None
    assert by_id[rerun.pk]["re_evaluation"] == {
        "previous": champion.pk,
        "stack": "torch 2.14.0 / CUDA 13.0 / GPU NVIDIA H200",
        "previous_stack": "torch 2.13.0 / CUDA 13.0 / GPU NVIDIA H200",
    }
    leaderboard_cache_clear()
    params = {"hardware": "h200", "problem_set": "kernelbench-main"}
    names = {r["name"] for r in client.get("/api/leaderboard/", params).json()["rows"] if r["kind"] == "llm"}
    assert {"champion-llm", "other-llm"} <= names
    answer = client.get("/api/leaderboard/", params | {"stack": "torch 2.14.0 / CUDA 13.0 / GPU NVIDIA H200"}).json()
    names = {r["name"] for r in answer["rows"] if r["kind"] == "llm" and r["attempted"]}
    assert answer["stack"].startswith("torch 2.14.0") and names == {"other-llm"}


def test_a_rerun_yields_to_a_waiting_upload(demo_problems, sent, stand_in, django_capture_on_commit_callbacks):
    """Whichever queue the broker hands over first, a re-run taken while an upload of its hardware waits is sent
    back to its own queue, later, and the upload runs first."""
    from leaderboard.services.submissions import submission_create
    from tests.pipeline.helpers import DEMO_SET, committed, demo_kernel, kernel_name, make_zip

    _verdict(OLD, llm_name="champion-llm", hardware="cpu", speedup=3.0)
    _verdict(NEW, llm_name="other-llm", hardware="cpu")
    with django_capture_on_commit_callbacks(execute=True):
        [plan] = champions_rerun(hardware="cpu")
        files = {kernel_name(1, 1, 0): demo_kernel(1, 1, 0)}
        submission_create(
            uploader=None, llm_name="m", filename="r.zip", data=make_zip(files), problem_set=DEMO_SET, hardware="cpu"
        )
    rerun = Evaluation.objects.get(pk=plan.queued[0])
    upload = Evaluation.objects.get(kernel__submission__llm__name="m")
    assert rerun_should_wait(evaluation_id=rerun.pk)
    before = len(sent.calls)
    evaluate_kernel.apply(args=[rerun.pk])  # the broker handed the re-run over first
    assert stand_in.calls == [] and Evaluation.objects.get(pk=rerun.pk).status == Evaluation.Status.QUEUED
    (again,) = sent.calls[before:]
    assert again["queue"] == "eval-cpu-rerun" and again["countdown"] > 0 and again["args"] == [rerun.pk]
    stand_in.default = lambda: record()
    evaluate_kernel.apply(args=[upload.pk])
    assert Evaluation.objects.get(pk=upload.pk).status == Evaluation.Status.DONE
    assert not rerun_should_wait(evaluation_id=rerun.pk)  # nothing waits now: the re-run runs
    stand_in.default = lambda: committed(rerun.pk, record())
    evaluate_kernel.apply(args=[rerun.pk])
    assert Evaluation.objects.get(pk=rerun.pk).status == Evaluation.Status.DONE
