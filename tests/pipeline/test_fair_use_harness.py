"""The compute budget charged from real harness processes on the CPU: what an evaluation used is what the harness
ran (a correct kernel, and a kernel that hangs in __init__ until the harness timeout), and a spent budget stops
both the next upload (429) and the account's evaluations still queued (not run)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluator.models import Evaluation
from evaluator.tasks.evaluation import evaluate_kernel
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

HANG_IN_INIT = """import time

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        while True:  # never finishes loading: holds the worker until the harness timeout
            time.sleep(0.05)

    def forward(self, x):
        return x
"""


def upload(client, files: dict[str, str]):
    payload = {"bundle": SimpleUploadedFile("run.zip", make_zip(files)), "llm": "model-a", "problem_set": DEMO_SET}
    return client.post("/api/submissions/", payload, format="multipart")


def test_a_real_evaluation_is_charged_its_harness_seconds_and_a_spent_budget_stops_the_rest(
    demo_problems, api, runner_module, settings, sent
):
    files = {kernel_name(1, 3, 0): demo_kernel(1, 3, 0), kernel_name(1, 1, 0): demo_kernel(1, 1, 0)}
    assert upload(api, files).status_code == 202
    first, second = Evaluation.objects.order_by("pk")
    evaluate_kernel.apply(args=[first.pk])  # the real harness, in its own processes
    first.refresh_from_db()
    assert (first.status, first.result_status) == ("done", "ok"), first.error
    phases = first.result["phases"]
    wall = (first.finished_at - first.started_at).total_seconds()
    assert 0 < first.harness_seconds <= wall
    assert first.harness_seconds == pytest.approx(phases["total"] - phases.get("gpu_wait", 0.0), abs=0.01)

    settings.BUDGET_GPU_SECONDS_PER_DAY = max(1, int(first.harness_seconds))  # spent by the first evaluation
    evaluate_kernel.apply(args=[second.pk])
    second.refresh_from_db()
    assert (second.status, second.result, second.attempts) == ("failed", None, 1)  # never handed to the harness
    assert second.error.startswith("not run: the GPU-time limit of account 'alice'")

    refused = upload(api, {kernel_name(1, 2, 0): demo_kernel(1, 2, 0)})
    assert refused.status_code == 429 and refused.json()["limit"] == "gpu_seconds_per_day"
    assert "GPU-seconds per day" in refused.json()["detail"] and refused.json()["resets_at"]
    used = api.get("/api/budget/").json()["account"]["limits"][1]["used"]
    assert used == pytest.approx(first.harness_seconds, abs=0.5)  # the run that was refused cost next to nothing


def test_a_kernel_that_hangs_while_loading_is_charged_its_time_until_the_timeout(
    demo_problems, api, runner_module, settings, sent
):
    settings.EVALUATOR_HARNESS_TIMEOUT = 12
    settings.BUDGET_GPU_SECONDS_PER_DAY = 10
    assert upload(api, {kernel_name(1, 1, 0): HANG_IN_INIT}).status_code == 202
    (hang,) = Evaluation.objects.all()
    evaluate_kernel.apply(args=[hang.pk])
    hang.refresh_from_db()
    assert (hang.status, hang.result_status, hang.correct) == ("done", "timeout", False), hang.error
    assert 10 <= hang.harness_seconds <= (hang.finished_at - hang.started_at).total_seconds()
    # One hang spent this account's day: the next bundle of hangs is refused whole, nothing queued.
    refused = upload(api, {kernel_name(1, 1, s): HANG_IN_INIT + f"# {s}\n" for s in range(1, 50)})
    assert refused.status_code == 429 and refused.json()["limit"] == "gpu_seconds_per_day"
    assert Evaluation.objects.count() == 1
