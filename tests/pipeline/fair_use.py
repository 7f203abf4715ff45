"""Helpers of the fair-use tests (tests/pipeline/test_fair_use*.py): uploads through the API, comment variants of a
demo kernel, a client for another account, and an evaluation marked finished as evaluation_finish stores it."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from evaluator.models import Evaluation
from leaderboard.services.tokens import api_token_create
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

KERNEL = demo_kernel(1, 1, 0)


def upload(client: APIClient, data: bytes, llm: str = "model-a", **fields):
    payload = {"bundle": SimpleUploadedFile("run.zip", data), "llm": llm, "problem_set": DEMO_SET, **fields}
    return client.post("/api/submissions/", payload, format="multipart")


def samples(count: int, source: str = KERNEL, *, start: int = 0) -> bytes:
    """`count` kernels for demo problem L1/1, samples start.., each a distinct comment variant of `source`."""
    return make_zip({kernel_name(1, 1, s): f"{source}\n# variant {s}\n" for s in range(start, start + count)})


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user)}")
    return client


def finish(evaluation: Evaluation, *, speedup: float, seconds: float = 10.0, when=None) -> None:
    """Mark an evaluation finished and correct (what evaluation_finish stores), charged `seconds`."""
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Evaluation.Status.DONE,
        result_status="ok",
        correct=True,
        standard_correct=True,
        speedup=speedup,
        speedup_fp32=speedup,
        finished_at=when or timezone.now(),
        harness_seconds=seconds,
    )
