"""Profiles on request: staff ask for a torch.profiler trace of one evaluation; a CPU evaluation is
answered 'unavailable' with the reason; a GPU one is queued on its hardware's queue, run with `profile_dir`, stored
and downloadable by staff only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from evaluator.models import ProfileRequest
from evaluator.services import profiles
from tests.factories import ProblemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("staffer", password="pw-123456789", is_staff=True)
    client.force_login(user)
    return user


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_a_cpu_evaluation_cannot_be_profiled_and_the_button_says_so(client, staff, add_sample):
    evaluation = add_sample("cpu-llm", ProblemFactory(), hardware="cpu")
    page = client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()
    assert "data-profile-unavailable" in page and "need a CUDA worker" in page and "ncu: not available" in page
    client.post(reverse("evaluator:profile-request", args=[evaluation.pk]))
    request = ProfileRequest.objects.get()
    assert request.status == ProfileRequest.Status.UNAVAILABLE and "CUDA" in request.detail


def test_a_gpu_profile_is_queued_run_stored_and_downloaded_by_staff_only(
    client, staff, add_sample, monkeypatch, django_capture_on_commit_callbacks
):
    evaluation = add_sample("gpu-llm", ProblemFactory(), hardware="h200")
    sent = []
    from evaluator.tasks.profile import profile_evaluation

    monkeypatch.setattr(profile_evaluation, "apply_async", lambda args, queue: sent.append((args, queue)))
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("evaluator:profile-request", args=[evaluation.pk]))
    request = ProfileRequest.objects.get()
    assert request.status == ProfileRequest.Status.QUEUED and sent == [([request.pk], "eval-h200")]

    seen = {}

    def fake_run(**arguments):  # what the harness does with profile_dir on a GPU (orchestrator._launched_kernels)
        seen.update(arguments["options"])
        folder = Path(arguments["options"]["profile_dir"])
        (folder / "candidate-trace.json").write_text(json.dumps({"traceEvents": []}))
        return {"status": "ok", "launched_kernels": {"traces": {"candidate": "candidate-trace.json"}}}

    done = profiles.profile_run(request_id=request.pk, run=fake_run)
    assert seen["hardware"] == "h200" and done.status == ProfileRequest.Status.DONE
    assert done.artefacts == ["candidate-trace.json"]
    assert profiles.profile_run(request_id=request.pk, run=fake_run) is None  # claimed once

    page = client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()
    url = reverse("evaluator:profile-download", args=[request.pk, "candidate-trace.json"])
    assert url in page
    response = client.get(url)
    assert response.status_code == 200 and b"traceEvents" in b"".join(response.streaming_content)
    assert client.get(reverse("evaluator:profile-download", args=[request.pk, "db.sqlite3"])).status_code == 404
    client.logout()
    assert client.get(url).status_code in (302, 403)
    assert (
        "Profiles (staff)"
        not in client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()
    )


def test_a_profile_without_traces_fails_with_the_reason(staff, add_sample):
    evaluation = add_sample("gpu-llm2", ProblemFactory(), hardware="h200")
    request = ProfileRequest.objects.create(evaluation=evaluation)
    done = profiles.profile_run(
        request_id=request.pk,
        run=lambda **_: {"status": "ok", "error": "", "launched_kernels": {"error": "worker died"}},
    )
    assert done.status == ProfileRequest.Status.FAILED and "worker died" in done.detail
