"""The evaluate_kernel task and the evaluation services: claim, finish, retry only InfraError, reaper, re-runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.management import call_command
from django.utils import timezone

from catalogue.models import Submission
from evaluator.harness.record import Record
from evaluator.models import Baseline, DistributionResult, Evaluation, SeedCommitment
from evaluator.services import evaluations as svc
from evaluator.services import queues, reaping, reruns
from evaluator.tasks.evaluation import evaluate_kernel
from leaderboard.services.submissions import submission_create
from tests.pipeline.helpers import DEMO_SET, committed, demo_kernel, kernel_name, make_zip, record

pytestmark = pytest.mark.django_db


def submit(*kernels: tuple[int, int, int]) -> Submission:
    files = {kernel_name(*k): demo_kernel(*k) for k in kernels}
    return submission_create(
        uploader=None, llm_name="m", filename="r.zip", data=make_zip(files), problem_set=DEMO_SET, hardware="cpu"
    )


def evals(submission: Submission) -> list[Evaluation]:
    return list(Evaluation.objects.filter(kernel__submission=submission).order_by("pk"))


def run(evaluation_id: int) -> None:
    evaluate_kernel.apply(args=[evaluation_id])


def test_the_harness_runs_once_even_when_the_message_arrives_twice(demo_problems, stand_in, sent):
    submission = submit((1, 1, 0))
    (ev,) = evals(submission)
    stand_in.script = [record(), record()]
    run(ev.pk)
    run(ev.pk)  # a duplicate delivery: the row is no longer QUEUED, so nothing happens
    assert len(stand_in.calls) == 1
    call = stand_in.calls[0]
    # The master seed whose digest was published when the upload queued the evaluation goes to the harness.
    published = SeedCommitment.objects.get(evaluation=ev)
    assert call["device"] == "cpu" and call["options"] == {"quick": True, "hardware": "cpu", "seeds": published.master}
    assert call["problem_source"] == ev.kernel.problem.source and call["kernel_source"] == ev.kernel.source
    ev.refresh_from_db()
    assert (ev.status, ev.result_status, ev.correct, ev.attempts) == ("done", "ok", True, 1)
    assert sorted(DistributionResult.objects.filter(evaluation=ev).values_list("name", flat=True)) == [
        "D1", "D2", "D3", "D4"
    ]  # fmt: skip
    submission.refresh_from_db()
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("done", 1, 1)


@pytest.mark.slow
def test_real_harness_arguments_are_accepted_and_its_record_stored(demo_problems, runner_module, sent):
    """The one in-process run of the real harness: the arguments we build satisfy it, its record fits our columns."""
    (ev,) = evals(submit((1, 3, 0)))
    run(ev.pk)
    ev.refresh_from_db()
    assert (ev.status, ev.result_status, ev.correct, ev.attempts) == ("done", "ok", True, 1), ev.error
    assert ev.speedup > 0 and ev.candidate_ms > 0 and ev.result["environment"]["torch"]
    assert DistributionResult.objects.filter(evaluation=ev).count() == 4
    assert set(Baseline.objects.filter(problem=ev.kernel.problem).values_list("precision", flat=True)) == {
        "tf32", "fp32"
    }  # fmt: skip


def test_result_columns_and_counts(demo_problems, stand_in, sent):
    submission = submit((1, 1, 0), (1, 2, 1))
    first, second = evals(submission)
    stand_in.script = [record(speedup=2.0), record(status="compile_error", correct=False, speedup=None)]
    run(first.pk)
    submission.refresh_from_db()
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("running", 1, 1)
    run(second.pk)
    first.refresh_from_db(), second.refresh_from_db(), submission.refresh_from_db()
    assert (first.speedup, first.speedup_ci_low, first.speedup_fp32, first.candidate_ms) == (2.0, 1.8, 2.2, 0.4)
    assert (second.status, second.result_status, second.correct, second.speedup) == (
        "done",
        "compile_error",
        False,
        None,
    )
    assert second.error == "compile_error happened"
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("done", 2, 1)
    assert len(stand_in.calls) == 2


def test_baselines_are_one_row_per_setting_aggregating_every_evaluation(demo_problems, stand_in, sent):
    a, b = evals(submit((1, 1, 0), (1, 1, 1)))
    stand_in.script = [record(), record()]
    run(a.pk)
    run(b.pk)
    tf32 = Baseline.objects.get(problem=a.kernel.problem, precision="tf32")
    assert (tf32.hardware, tf32.torch_version, tf32.median_ms, tf32.peak_memory_bytes) == ("cpu", "2.13.0", 0.5, 4096)
    assert tf32.evaluations == 2 and set(tf32.stats["samples"]) == {str(a.pk), str(b.pk)}
    assert Baseline.objects.count() == 2  # tf32 + fp32; compile was not measured


def test_infra_errors_are_retried_up_to_max_attempts_then_failed(demo_problems, stand_in, settings, sent):
    settings.EVALUATOR_MAX_ATTEMPTS = 3
    submission = submit((1, 1, 0))
    (ev,) = evals(submission)
    stand_in.script = [svc_infra("disk full") for _ in range(5)]
    run(ev.pk)
    ev.refresh_from_db(), submission.refresh_from_db()
    assert len(stand_in.calls) == 3
    assert (ev.status, ev.attempts) == ("failed", 3)
    assert ev.error.startswith("gave up after 3 attempts") and "disk full" in ev.error
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("failed", 1, 0)


def test_infra_error_then_success(demo_problems, stand_in, sent):
    (ev,) = evals(submit((1, 1, 0)))
    stand_in.script = [svc_infra("spawn failed"), record()]
    run(ev.pk)
    ev.refresh_from_db()
    assert (ev.status, ev.attempts, ev.correct) == ("done", 2, True)


@pytest.mark.parametrize("error", [ValueError("bug"), KeyError("x")])
def test_other_exceptions_are_not_retried(demo_problems, stand_in, sent, error):
    (ev,) = evals(submit((1, 1, 0)))
    stand_in.script = [error, record()]
    run(ev.pk)
    ev.refresh_from_db()
    assert len(stand_in.calls) == 1
    assert (ev.status, ev.attempts) == ("failed", 1) and ev.error.startswith("internal error")


def test_soft_time_limit_records_a_timeout(demo_problems, stand_in, sent):
    (ev,) = evals(submit((1, 1, 0)))
    stand_in.script = [SoftTimeLimitExceeded()]
    run(ev.pk)
    ev.refresh_from_db()
    assert (ev.status, ev.result_status, ev.correct) == ("done", "timeout", False)


def test_malformed_and_non_finite_records(demo_problems, stand_in, sent):
    a, b = evals(submit((1, 1, 0), (1, 2, 0)))
    nan = record(speedup=float("nan"))
    nan["memory_ratio"] = float("inf")
    nan["speedup_fp32"] = 0.0
    stand_in.script = [{"status": "bogus"}, nan]
    run(a.pk)
    run(b.pk)
    a.refresh_from_db(), b.refresh_from_db()
    assert a.status == "failed" and "malformed" in a.error
    assert (b.status, b.speedup, b.memory_ratio, b.speedup_fp32) == ("done", None, None, None)
    assert b.result["speedup"] is None


def test_a_stale_attempt_cannot_overwrite_a_newer_one(demo_problems, sent):
    (ev,) = evals(submit((1, 1, 0)))
    first = svc.evaluation_claim(evaluation_id=ev.pk, worker="w1")
    Evaluation.objects.filter(pk=ev.pk).update(started_at=timezone.now() - timedelta(days=1))
    assert reaping.evaluations_reap().requeued == [ev.pk]
    second = svc.evaluation_claim(evaluation_id=ev.pk, worker="w2")
    assert second.attempts == 2
    assert svc.evaluation_finish(evaluation=first, record=Record.from_dict(record(speedup=9.0))) is False
    assert (
        svc.evaluation_finish(evaluation=second, record=Record.from_dict(committed(ev.pk, record(speedup=1.1)))) is True
    )
    ev.refresh_from_db()
    assert (ev.speedup, ev.worker) == (1.1, "w2")
    assert Submission.objects.get().evaluated_count == 1


def test_reaper_requeues_then_gives_up(demo_problems, settings, sent, django_capture_on_commit_callbacks):
    settings.EVALUATOR_MAX_ATTEMPTS = 2
    old, fresh = evals(submit((1, 1, 0), (1, 2, 0)))
    for ev in (old, fresh):
        svc.evaluation_claim(evaluation_id=ev.pk, worker="dead")
    long_ago = timezone.now() - timedelta(seconds=queues.time_limits().hard + 120)
    Evaluation.objects.filter(pk=old.pk).update(started_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("reap_evaluations")
    old.refresh_from_db(), fresh.refresh_from_db()
    assert (old.status, old.attempts, old.worker) == ("queued", 1, "")
    assert (fresh.status, fresh.attempts) == ("running", 1)
    assert sent.calls[-1]["args"] == [old.pk] and sent.calls[-1]["task_id"] == old.task_id
    svc.evaluation_claim(evaluation_id=old.pk, worker="dead-again")
    Evaluation.objects.filter(pk=old.pk).update(started_at=long_ago)
    result = reaping.evaluations_reap()
    old.refresh_from_db()
    assert (result.requeued, result.failed) == ([], [old.pk])
    assert old.status == "failed" and "gave up" in old.error
    assert Submission.objects.get().evaluated_count == 1


def test_rerun_of_a_finished_evaluation(demo_problems, stand_in, sent, django_capture_on_commit_callbacks):
    submission = submit((1, 1, 0))
    (old,) = evals(submission)
    stand_in.script = [record(), record(speedup=3.0)]
    run(old.pk)
    with django_capture_on_commit_callbacks(execute=True):
        new = reruns.evaluation_rerun(evaluation_id=old.pk)
    old.refresh_from_db(), submission.refresh_from_db()
    assert not old.is_current and old.status == "done" and new.is_current and new.status == "queued"
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("running", 0, 0)
    assert sent.ids[-1] == new.pk
    run(new.pk)
    submission.refresh_from_db()
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("done", 1, 1)
    assert Evaluation.objects.get(pk=new.pk).speedup == 3.0


def test_rerun_while_queued_or_running_counts_only_the_new_row(demo_problems, stand_in, sent):
    submission = submit((1, 1, 0), (1, 2, 0))
    queued, running = evals(submission)
    claimed = svc.evaluation_claim(evaluation_id=running.pk)
    new_q = reruns.evaluation_rerun(evaluation_id=queued.pk)
    new_r = reruns.evaluation_rerun(evaluation_id=running.pk)
    queued.refresh_from_db()
    assert queued.status == "failed" and queued.error == "superseded by a re-run"
    run(queued.pk)  # its old message arrives: not claimable any more
    assert stand_in.calls == []
    assert (
        svc.evaluation_finish(evaluation=claimed, record=Record.from_dict(record())) is True
    )  # the old run still completes...
    submission.refresh_from_db()
    assert submission.evaluated_count == 0  # ...but is not counted: it is no longer current
    stand_in.script = [record(), record()]
    run(new_q.pk)
    run(new_r.pk)
    submission.refresh_from_db()
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("done", 2, 2)


def test_submission_rerun_requeues_every_kernel(demo_problems, stand_in, sent):
    submission = submit((1, 1, 0), (1, 2, 0))
    stand_in.script = [record(), record(correct=False)]
    for ev in evals(submission):
        run(ev.pk)
    news = reruns.submission_rerun(submission_id=submission.pk)
    submission.refresh_from_db()
    assert len(news) == 2 and {e.status for e in news} == {"queued"}
    assert (submission.status, submission.evaluated_count, submission.correct_count) == ("running", 0, 0)
    assert Evaluation.objects.filter(kernel__submission=submission, is_current=True).count() == 2
    assert Evaluation.objects.filter(kernel__submission=submission).count() == 4


def svc_infra(message: str) -> Exception:
    import evaluator.runner as runner

    return runner.InfraError(message)


def test_reaper_with_zero_staleness_takes_every_running_row(demo_problems, sent):
    (ev,) = evals(submit((1, 1, 0)))
    svc.evaluation_claim(evaluation_id=ev.pk)
    assert reaping.evaluations_reap(stale_after=timedelta(0)).requeued == [ev.pk]


def test_the_prestart_setting_reaches_the_runner(demo_problems, stand_in, sent, settings):
    """EVALUATOR_PRESTART: each worker process keeps its next harness started (runner.run_evaluation(prestart=...))."""
    first, second = evals(submit((1, 1, 0), (1, 2, 0)))
    run(first.pk)
    settings.EVALUATOR_PRESTART = True
    run(second.pk)
    assert [call["prestart"] for call in stand_in.calls] == [False, True]


# --- Faults: heartbeats, the outbox and the broker --------------------------------------------------------------


def test_the_reaper_requeues_a_running_row_whose_heartbeat_stopped(demo_problems, sent, settings):
    settings.EVALUATOR_HEARTBEAT_STALE = 60
    dead, alive = evals(submit((1, 1, 0), (1, 2, 0)))
    for ev in (dead, alive):
        svc.evaluation_claim(evaluation_id=ev.pk, worker="w")
    # Started a minute ago (far below the hard time limit), but its worker stopped beating 61 s ago.
    Evaluation.objects.filter(pk=dead.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    assert reaping.evaluations_reap().requeued == [dead.pk]
    alive.refresh_from_db(), dead.refresh_from_db()
    assert alive.status == "running" and (dead.status, dead.heartbeat_at, dead.enqueued_at) == ("queued", None, None)


def test_a_heartbeat_only_counts_for_the_attempt_that_owns_the_row(demo_problems, sent):
    (ev,) = evals(submit((1, 1, 0)))
    first = svc.evaluation_claim(evaluation_id=ev.pk, worker="w1")
    Evaluation.objects.filter(pk=ev.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert svc.evaluation_heartbeat(evaluation=first) is True
    assert Evaluation.objects.get(pk=ev.pk).heartbeat_at > timezone.now() - timedelta(seconds=5)
    reaping.evaluations_reap(stale_after=timedelta(0))
    assert svc.evaluation_heartbeat(evaluation=first) is False  # reaped: the old attempt's thread stops


def test_the_task_beats_while_the_harness_runs(demo_problems, stand_in, sent, settings, monkeypatch):
    settings.EVALUATOR_HEARTBEAT_INTERVAL = 0.05
    beats: list[int] = []
    monkeypatch.setattr(svc, "evaluation_heartbeat", lambda *, evaluation: beats.append(evaluation.pk) or True)
    (ev,) = evals(submit((1, 1, 0)))
    stand_in.default = lambda: __import__("time").sleep(0.5) or record()
    run(ev.pk)
    assert len(beats) >= 3 and set(beats) == {ev.pk}
    assert Evaluation.objects.get(pk=ev.pk).status == "done"


def test_the_reaper_sends_queued_rows_that_never_reached_the_broker(
    demo_problems, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit((1, 1, 0), (1, 2, 0))
    sent_first, unsent = evals(submission)
    assert sent_first.enqueued_at is not None  # the outbox marker of a message that reached the broker
    Evaluation.objects.filter(pk=unsent.pk).update(enqueued_at=None, queued_at=timezone.now() - timedelta(minutes=2))
    calls = len(sent.calls)
    with django_capture_on_commit_callbacks(execute=True):
        result = reaping.evaluations_reap()
    assert result.resent == [unsent.pk] and [c["args"] for c in sent.calls[calls:]] == [[unsent.pk]]
    assert sent.audits[-1] == [[unsent.kernel_id]]  # its static audit was lost with it
    assert Evaluation.objects.get(pk=unsent.pk).enqueued_at is not None
    with django_capture_on_commit_callbacks(execute=True):
        assert reaping.evaluations_reap().resent == []  # sent now: not again until EVALUATOR_QUEUED_STALE


@pytest.fixture
def broker_down(settings):
    """Point the Celery app at a closed port (nothing listens on the discard port), as a dead broker looks."""
    from config.celery import app

    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url, app._pool, app.amqp._producer_pool = "redis://127.0.0.1:9/0", None, None
    yield
    app.conf.broker_url, app._pool, app.amqp._producer_pool = saved


@pytest.mark.django_db(transaction=True)
def test_an_upload_while_the_broker_is_down_is_stored_and_sent_later(demo_problems, api, broker_down, monkeypatch):
    files = {kernel_name(1, 1, 0): demo_kernel(1, 1, 0), kernel_name(1, 2, 0): demo_kernel(1, 2, 0)}
    upload = __import__("io").BytesIO(make_zip(files))
    upload.name = "r.zip"
    form = {"llm": "m", "bundle": upload, "problem_set": DEMO_SET, "hardware": "cpu"}
    response = api.post("/api/submissions/", form, format="multipart")
    assert response.status_code == 202, response.content
    assert "unreachable" in response.json()["note"]
    submission = Submission.objects.get(pk=response.json()["id"])
    rows = evals(submission)
    assert [(ev.status, ev.enqueued_at) for ev in rows] == [("queued", None)] * 2
    old = timezone.now() - timedelta(minutes=2)
    Evaluation.objects.filter(kernel__submission=submission).update(queued_at=old)
    assert reaping.evaluations_reap().resent == []  # still down: the rows wait for the next run
    # The broker is back.
    from evaluator.tasks.audit import audit_kernels_static

    published: list[int] = []
    monkeypatch.setattr(evaluate_kernel, "apply_async", lambda **kw: published.append(kw["args"][0]))
    monkeypatch.setattr(audit_kernels_static, "apply_async", lambda *a, **kw: None)
    assert reaping.evaluations_reap().resent == [ev.pk for ev in rows] == published
    assert all(ev.enqueued_at for ev in evals(submission))
