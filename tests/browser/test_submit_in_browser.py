"""The upload form, end to end in Chromium: log in, upload one kernel, land on its submission, inspect it."""

from __future__ import annotations

import re

import pytest

from catalogue.models import Kernel
from evaluator.models import Evaluation
from tests.factories import KERNEL_SOURCE, ProblemFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def enqueued(monkeypatch):
    """Evaluation ids sent to the broker. The broker itself is not under test here (no worker runs in this test),
    so the send is recorded instead of written to var/celery."""
    from evaluator.tasks.evaluation import evaluate_kernel

    sent: list[int] = []
    monkeypatch.setattr(evaluate_kernel, "apply_async", lambda **kw: sent.append(kw["args"][0]))
    return sent


def test_upload_one_kernel_and_inspect_it(page, django_user_model, enqueued, screenshot):
    django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    problem = ProblemFactory(level=1, problem_id=19, name="ReLU")
    page.goto("/submit/")
    page.wait_for_url(re.compile(r"/accounts/login/"))  # the form needs an account
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/submit/$"))
    page.fill("input[name=new_llm]", "browser-llm")
    page.set_input_files(
        "input[name=bundle]", {"name": "kernel.py", "mimeType": "text/x-python", "buffer": KERNEL_SOURCE.encode()}
    )
    page.fill("input[name=level]", "1")
    page.fill("input[name=problem_id]", "19")
    page.get_by_role("button", name="Upload and evaluate").click()
    page.wait_for_url(re.compile(r"/submissions/\d+/$"))
    assert "Bundle accepted" in page.content()
    kernel = Kernel.objects.get(llm__name="browser-llm")
    assert kernel.problem_id == problem.pk
    assert enqueued == list(Evaluation.objects.filter(kernel=kernel).values_list("pk", flat=True))
    page.goto(f"/kernels/{kernel.pk}/")
    assert "browser-llm" in page.locator("h1").inner_text()
    assert "Queued" in page.locator("section.cards").inner_text()
    assert "clamp_min" in page.locator("#kernel-source").inner_text()
    screenshot(page, "inspector-queued")
    assert page.js_errors == []
