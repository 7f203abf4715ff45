"""Fair use: an evaluation is charged its bound (the harness timeout) from when it is sent to a worker, and the
unused part comes back when it finishes, so an account's kernels waiting at the workers never add up to more than
its remaining GPU-seconds: the rest of a large upload waits, unsent, until finishes or the window free room."""

from __future__ import annotations

import pytest
from django.utils import timezone

from evaluator.harness.record import Record
from evaluator.models import ComputeBudget, Evaluation
from evaluator.selectors.budget import budget_for_user
from evaluator.services import evaluations as svc
from evaluator.services import reaping
from tests.pipeline.fair_use import samples, upload
from tests.pipeline.helpers import committed, record

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_budget(settings):
    """Room for three kernels at the 300 s bound: 1000 GPU-seconds a day."""
    settings.EVALUATOR_HARNESS_TIMEOUT = 300
    settings.BUDGET_GPU_SECONDS_PER_DAY = 1000


def upload_sent(api, count: int, capture, *, start: int = 0):
    with capture(execute=True):  # the messages go out after the upload commits
        response = upload(api, samples(count, start=start))
    assert response.status_code == 202, response.content
    return response


def gpu(user):
    return budget_for_user(user=user).limit("gpu_seconds_per_day")


def test_an_accounts_queued_kernels_are_bounded_by_its_remaining_budget(
    demo_problems, api, user, small_budget, sent, django_capture_on_commit_callbacks
):
    upload_sent(api, 10, django_capture_on_commit_callbacks)  # the whole bundle is accepted and stored...
    assert Evaluation.objects.filter(status="queued").count() == 10
    sent_ids = sorted(sent.ids)
    assert sent_ids == sorted(Evaluation.objects.order_by("pk").values_list("pk", flat=True)[:3])  # ...3 go out
    assert Evaluation.objects.filter(enqueued_at=None).count() == 7  # the rest wait, unsent
    charged = gpu(user)
    assert (charged.reserved, charged.used, charged.remaining) == (900, 900, 100)
    # A second upload adds to the wait, not to the workers' queues.
    upload_sent(api, 2, django_capture_on_commit_callbacks, start=10)
    assert len(sent.ids) == 3


def test_a_finish_refunds_the_unused_bound_and_sends_the_next(
    demo_problems, api, user, small_budget, sent, django_capture_on_commit_callbacks
):
    upload_sent(api, 5, django_capture_on_commit_callbacks)
    first = Evaluation.objects.get(pk=sent.ids[0])
    claimed = svc.evaluation_claim(evaluation_id=first.pk, worker="w1")
    with django_capture_on_commit_callbacks(execute=True):
        assert (
            svc.evaluation_finish(evaluation=claimed, record=Record.from_dict(committed(claimed.pk, record()))) is True
        )
    first.refresh_from_db()
    assert 0 <= first.harness_seconds < 300  # charged what it used, not its bound
    assert len(sent.ids) == 4 and sent.ids[3] not in sent.ids[:3]  # its room went to the next held kernel
    charged = gpu(user)
    assert charged.reserved == 900 and charged.used == pytest.approx(900 + first.harness_seconds)


def test_the_reaper_sends_held_kernels_once_their_budget_can_hold_them(
    demo_problems, api, user, small_budget, sent, django_capture_on_commit_callbacks
):
    upload_sent(api, 6, django_capture_on_commit_callbacks)
    assert len(sent.ids) == 3
    held_since = timezone.now() - timezone.timedelta(minutes=5)
    Evaluation.objects.filter(enqueued_at=None).update(queued_at=held_since)
    with django_capture_on_commit_callbacks(execute=True):
        reaping.evaluations_reap()
    assert len(sent.ids) == 3  # nothing freed: still held, and not re-sent as lost messages
    # Staff raise the account's and the LLM's budgets (room frees alike as the window moves past old use).
    ComputeBudget.objects.create(user=user, gpu_seconds_per_day=100_000)
    ComputeBudget.objects.create(llm=Evaluation.objects.first().kernel.llm, gpu_seconds_per_day=100_000)
    with django_capture_on_commit_callbacks(execute=True):
        reaping.evaluations_reap()
    assert len(sent.ids) == 6 and Evaluation.objects.filter(enqueued_at=None).count() == 0


def test_a_budget_smaller_than_one_bound_still_runs_one_kernel_at_a_time(
    demo_problems, api, settings, sent, django_capture_on_commit_callbacks
):
    settings.EVALUATOR_HARNESS_TIMEOUT = 900
    settings.BUDGET_GPU_SECONDS_PER_DAY = 600
    upload_sent(api, 3, django_capture_on_commit_callbacks)
    assert len(sent.ids) == 1


def test_the_account_sees_what_its_queued_kernels_hold(
    demo_problems, api, client, user, small_budget, sent, django_capture_on_commit_callbacks
):
    upload_sent(api, 4, django_capture_on_commit_callbacks)
    body = api.get("/api/budget/").json()
    limit = next(lim for lim in body["account"]["limits"] if lim["name"] == "gpu_seconds_per_day")
    assert (limit["limit"], limit["used"], limit["reserved"], limit["remaining"]) == (1000, 900, 900, 100)
    client.force_login(user)
    page = client.get("/account/").content.decode()
    assert "900 held by kernels sent to a worker or running" in page
