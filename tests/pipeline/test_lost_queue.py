"""A broker that loses its queue (a restart without persistence, a flushed Redis) is noticed by the reaper within
minutes, from the broker's own queue lengths, against a real Redis (db 15) and real evaluate_kernel messages."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluator.models import Evaluation
from evaluator.services import reaping
from leaderboard.services.submissions import submission_create
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

pytestmark = [pytest.mark.services, pytest.mark.django_db]

REDIS_URL = os.getenv("PIPELINE_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
def redis_broker() -> Iterator[object]:
    """The Celery app pointed at Redis db 15, emptied before and after; yields a redis client on it."""
    redis = pytest.importorskip("redis")
    from config.celery import app

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_URL}")
    client.flushdb()
    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url, app._pool, app.amqp._producer_pool = REDIS_URL, None, None
    yield client
    app.conf.broker_url, app._pool, app.amqp._producer_pool = saved
    client.flushdb()


def upload(*kernels: tuple[int, int, int]) -> list[Evaluation]:
    files = {kernel_name(*k): demo_kernel(*k) for k in kernels}
    submission = submission_create(
        uploader=None, llm_name="m", filename="r.zip", data=make_zip(files), problem_set=DEMO_SET, hardware="cpu"
    )
    return list(Evaluation.objects.filter(kernel__submission=submission).order_by("pk"))


def age(rows: list[Evaluation], minutes: int) -> None:
    """Make the rows' last send `minutes` old (each must have reached the broker: enqueued_at set)."""
    assert Evaluation.objects.filter(pk__in=[ev.pk for ev in rows], enqueued_at__isnull=True).count() == 0
    Evaluation.objects.filter(pk__in=[ev.pk for ev in rows]).update(
        enqueued_at=timezone.now() - timedelta(minutes=minutes)
    )


def reap(capture) -> reaping.ReapResult:
    with capture(execute=True):
        return reaping.evaluations_reap()


def test_a_flushed_queue_is_resent_within_minutes_and_a_full_one_is_left_alone(
    demo_problems, redis_broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        rows = upload((1, 1, 0), (1, 2, 0), (1, 3, 0))
    assert redis_broker.llen("eval-cpu") == 3 and all(ev.enqueued_at for ev in Evaluation.objects.all())

    age(rows, 5)  # waiting 5 minutes, still in the queue: workers are just busy
    result = reap(django_capture_on_commit_callbacks)
    assert result.broker == {"eval-cpu": 3} and result.lost == [] and result.resent == []

    redis_broker.flushdb()  # the broker restarts without persistence: its queue is gone
    age(rows, 1)  # younger than EVALUATOR_LOST_QUEUE_AFTER (2 minutes): not yet
    assert reap(django_capture_on_commit_callbacks).lost == []
    age(rows, 3)
    started = time.monotonic()
    result = reap(django_capture_on_commit_callbacks)
    assert result.lost == [ev.pk for ev in rows] and result.broker == {"eval-cpu": 0}
    assert time.monotonic() - started < 10
    assert redis_broker.llen("eval-cpu") == 3  # the messages are back in the broker
    assert reap(django_capture_on_commit_callbacks).lost == []  # just sent: nothing more to do


def test_only_the_rows_the_queue_no_longer_holds_are_resent(
    demo_problems, redis_broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        older = upload((1, 1, 0), (1, 2, 0))
    age(older, 10)
    with django_capture_on_commit_callbacks(execute=True):
        (newest,) = upload((1, 3, 0))
    age([newest], 5)
    redis_broker.ltrim("eval-cpu", 0, 0)  # the queue kept only its newest message (kombu pushes on the left)
    result = reap(django_capture_on_commit_callbacks)
    assert result.broker == {"eval-cpu": 1} and result.lost == [ev.pk for ev in older]
    assert redis_broker.llen("eval-cpu") == 3


def test_a_retry_waiting_for_its_backoff_is_not_resent_early(
    demo_problems, redis_broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        (ev,) = upload((1, 1, 0))
    Evaluation.objects.filter(pk=ev.pk).update(attempts=1)  # a worker holds its retry message until the countdown
    redis_broker.flushdb()
    age([ev], 5)
    assert reap(django_capture_on_commit_callbacks).lost == []
    age([ev], 13)  # past the longest backoff as well
    assert reap(django_capture_on_commit_callbacks).lost == [ev.pk]


def test_an_unreachable_broker_is_reported_and_changes_nothing(
    demo_problems, redis_broker, django_capture_on_commit_callbacks
):
    from config.celery import app

    with django_capture_on_commit_callbacks(execute=True):
        rows = upload((1, 1, 0))
    age(rows, 5)
    app.conf.broker_url, app._pool, app.amqp._producer_pool = "redis://127.0.0.1:9/0", None, None
    started = time.monotonic()
    result = reap(django_capture_on_commit_callbacks)
    assert isinstance(result.broker, str) and result.broker.startswith("unreachable")
    assert result.lost == [] and time.monotonic() - started < 30
