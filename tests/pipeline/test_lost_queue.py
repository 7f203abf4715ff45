"""A broker that loses its queue (a restart without persistence, a flushed Redis) is noticed by the reaper within
minutes, from the broker's own queue lengths, against a real Redis (db 15) and a real RabbitMQ, with real
evaluate_kernel messages. The tests use a hardware label of their own (queue `eval-cpu-lostq`) and touch no other
queue, since other test runs may share these servers."""

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
AMQP_URL = os.getenv("PIPELINE_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")
HARDWARE = "cpu-lostq"
QUEUE = f"eval-{HARDWARE}"


class RedisQueue:
    """The test's one queue in Redis db 15 (kombu keeps a queue as a list, newest message on the left)."""

    def __init__(self, client) -> None:
        self.client = client

    def llen(self) -> int:
        return self.client.llen(QUEUE)

    def lose(self) -> None:
        """What a restart without persistence does to it."""
        keys = [*self.client.keys(f"{QUEUE}*"), *self.client.keys(f"_kombu.binding*.{QUEUE}")]
        if keys:
            self.client.delete(*keys)


def _point_app_at(url: str, monkeypatch: pytest.MonkeyPatch, settings) -> None:
    from config.celery import app
    from evaluator.tasks.audit import audit_kernels_static

    settings.EVALUATOR_HARDWARE_LABELS = ["cpu", HARDWARE]
    monkeypatch.setattr(audit_kernels_static, "apply_async", lambda *a, **kw: None)  # no message for another queue
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    monkeypatch.setattr(app.conf, "broker_url", url)


@pytest.fixture
def redis_broker(monkeypatch, settings) -> Iterator[RedisQueue]:
    """The Celery app pointed at Redis db 15; the test's queue emptied before and after."""
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_URL}")
    queue = RedisQueue(client)
    queue.lose()
    _point_app_at(REDIS_URL, monkeypatch, settings)
    yield queue
    queue.lose()


def upload(*kernels: tuple[int, int, int]) -> list[Evaluation]:
    files = {kernel_name(*k): demo_kernel(*k) for k in kernels}
    submission = submission_create(
        uploader=None, llm_name="m", filename="r.zip", data=make_zip(files), problem_set=DEMO_SET, hardware=HARDWARE
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
    assert redis_broker.llen() == 3 and all(ev.enqueued_at for ev in Evaluation.objects.all())

    age(rows, 5)  # waiting 5 minutes, still in the queue: workers are just busy
    result = reap(django_capture_on_commit_callbacks)
    assert result.broker == {QUEUE: 3} and result.lost == [] and result.resent == []

    redis_broker.lose()  # the broker restarts without persistence: its queue is gone
    age(rows, 1)  # younger than EVALUATOR_LOST_QUEUE_AFTER (2 minutes): not yet
    assert reap(django_capture_on_commit_callbacks).lost == []
    age(rows, 3)
    started = time.monotonic()
    result = reap(django_capture_on_commit_callbacks)
    assert result.lost == [ev.pk for ev in rows] and result.broker == {QUEUE: 0}
    assert time.monotonic() - started < 10
    assert redis_broker.llen() == 3  # the messages are back in the broker
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
    redis_broker.client.ltrim(QUEUE, 0, 0)  # the queue kept only its newest message (kombu pushes on the left)
    result = reap(django_capture_on_commit_callbacks)
    assert result.broker == {QUEUE: 1} and result.lost == [ev.pk for ev in older]
    assert redis_broker.llen() == 3


def test_a_retry_waiting_for_its_backoff_is_not_resent_early(
    demo_problems, redis_broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        (ev,) = upload((1, 1, 0))
    Evaluation.objects.filter(pk=ev.pk).update(attempts=1)  # a worker holds its retry message until the countdown
    redis_broker.lose()
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
    app.conf.broker_url, app._pool, app.amqp._producer_pool = (
        "redis://127.0.0.1:9/0",
        None,
        None,
    )  # undone by the fixture
    started = time.monotonic()
    result = reap(django_capture_on_commit_callbacks)
    assert isinstance(result.broker, str) and result.broker.startswith("unreachable")
    assert result.lost == [] and time.monotonic() - started < 30


@pytest.fixture
def amqp_broker(monkeypatch, settings) -> Iterator[object]:
    """The Celery app pointed at the real RabbitMQ; the test's queue deleted before and after. Yields a kombu
    connection to it."""
    from kombu import Connection

    conn = Connection(AMQP_URL, connect_timeout=5)
    try:
        conn.ensure_connection(max_retries=1)
    except Exception as exc:
        pytest.skip(f"no RabbitMQ at {AMQP_URL}: {exc}")

    def delete() -> None:
        channel = conn.channel()
        try:
            channel.queue_delete(QUEUE)
        finally:
            channel.close()

    delete()
    _point_app_at(AMQP_URL, monkeypatch, settings)
    yield conn
    delete()
    conn.release()


def _wait_for_messages(count: int, timeout: float = 10.0) -> None:
    """Until the broker counts `count` messages in the queue (as the reaper asks it), or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while reaping.broker_queue_lengths([QUEUE])[QUEUE] < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_rabbitmq_a_deleted_or_purged_queue_is_resent(demo_problems, amqp_broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        rows = upload((1, 1, 0), (1, 2, 0))
    _wait_for_messages(2)  # RabbitMQ counts a message a moment after it is published
    age(rows, 5)
    assert reap(django_capture_on_commit_callbacks).broker == {QUEUE: 2}  # still there: nothing to do
    channel = amqp_broker.channel()
    channel.queue_purge(QUEUE)  # the messages are lost, the queue stays
    channel.close()
    result = reap(django_capture_on_commit_callbacks)
    assert result.broker == {QUEUE: 0} and result.lost == [ev.pk for ev in rows]
    channel = amqp_broker.channel()
    channel.queue_delete(QUEUE)  # and the queue itself lost (a passive declare of it fails: counted as empty)
    channel.close()
    age(rows, 5)
    result = reap(django_capture_on_commit_callbacks)
    assert result.broker == {QUEUE: 0} and result.lost == [ev.pk for ev in rows]
