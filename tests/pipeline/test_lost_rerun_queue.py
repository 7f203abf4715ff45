"""The reaper counts the re-run queues too, against a real Redis: a re-evaluation waiting on eval-<hw>-rerun is not
taken for lost, and one whose queue was lost is sent again to its own queue, never to the uploads queue. The test
uses a hardware label of its own and Redis db 12 (PIPELINE_REDIS_URL), touching no other queue."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluator.harness.record import Record
from evaluator.models import Evaluation
from evaluator.services import reaping
from evaluator.services.reruns import champions_rerun
from tests.factories import EvaluationFactory, KernelFactory, LLMFactory, ProblemFactory, SubmissionFactory

pytestmark = [pytest.mark.services, pytest.mark.django_db]

REDIS_URL = os.getenv("PIPELINE_REDIS_URL", "redis://127.0.0.1:6379/12")
HARDWARE = "cpu-rerunq"
UPLOADS, RERUNS = f"eval-{HARDWARE}", f"eval-{HARDWARE}-rerun"


@pytest.fixture
def redis_queues(monkeypatch, settings) -> Iterator[object]:
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_URL}")

    def lose(queue: str) -> None:
        keys = [*client.keys(f"{queue}"), *client.keys(f"{queue}\x06*"), *client.keys(f"_kombu.binding*.{queue}")]
        if keys:
            client.delete(*keys)

    for queue in (UPLOADS, RERUNS):
        lose(queue)
    from config.celery import app

    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    monkeypatch.setattr(app.conf, "broker_url", REDIS_URL)
    client.lose = lose  # type: ignore[attr-defined]
    yield client
    for queue in (UPLOADS, RERUNS):
        lose(queue)


def _verdict(torch: str, speedup: float) -> Evaluation:
    kernel = KernelFactory(
        problem=ProblemFactory(),
        submission=SubmissionFactory(
            llm=LLMFactory(), hardware=HARDWARE, kernel_count=1, evaluated_count=1, correct_count=1
        ),
    )
    result = Record(status="ok", correct=True, standard_correct=True, speedup=speedup).to_dict()
    result["environment"].update(torch=torch)
    return EvaluationFactory(kernel=kernel, hardware=HARDWARE, speedup=speedup, result=result, harness_seconds=5.0)


def test_a_lost_rerun_goes_back_to_its_own_queue(redis_queues, django_capture_on_commit_callbacks):
    _verdict("2.13.0", 3.0)
    _verdict("2.14.0", 1.1)  # the workers run 2.14 now
    with django_capture_on_commit_callbacks(execute=True):
        [plan] = champions_rerun(hardware=HARDWARE)
    (rerun_id,) = plan.queued
    assert (redis_queues.llen(RERUNS), redis_queues.llen(UPLOADS)) == (1, 0)

    def reap() -> reaping.ReapResult:
        Evaluation.objects.filter(pk=rerun_id).update(enqueued_at=timezone.now() - timedelta(minutes=5))
        with django_capture_on_commit_callbacks(execute=True):
            return reaping.evaluations_reap()

    # Waiting in its queue (no worker is free): not lost, and the uploads queue is left alone.
    result = reap()
    assert result.lost == [] and result.broker == {RERUNS: 1}
    assert (redis_queues.llen(RERUNS), redis_queues.llen(UPLOADS)) == (1, 0)
    # The broker loses the re-run queue: the row is sent again, to the re-run queue.
    redis_queues.lose(RERUNS)
    result = reap()
    assert result.lost == [rerun_id] and result.broker == {RERUNS: 0}
    assert (redis_queues.llen(RERUNS), redis_queues.llen(UPLOADS)) == (1, 0)
