"""Untrusted input never answers 500: hostile JSON in bundles and request bodies, odd query strings,
hardware labels nobody serves, and request bodies over the upload cap (refused before they are read)."""

from __future__ import annotations

import io
import json
import random

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from catalogue.models import Submission
from tests.factories import EvaluationFactory
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

pytestmark = pytest.mark.django_db

GOOD = demo_kernel(1, 1)
DEEP = "[" * 100_000 + "]" * 100_000


def _bundles() -> dict[str, tuple[str, bytes]]:
    kernels = json.dumps({"level_1_problem_1_sample_0": GOOD}).encode()
    return {
        "deep jsonl": ("b.jsonl", ('{"level": ' + DEEP + "}").encode()),
        "deep json": ("b.json", ('{"kernels": {}, "metadata": ' + DEEP + "}").encode()),
        "deep eval_results": ("run.zip", make_zip({kernel_name(1, 1): GOOD, "eval_results.json": DEEP})),
        "NaN metadata": ("b.json", b'{"metadata": {"x": NaN}, "kernels": ' + kernels + b"}"),
        "huge float metadata": ("b.json", b'{"metadata": {"x": 1e999}, "kernels": ' + kernels + b"}"),
        "Infinity eval_results": (
            "run.zip",
            make_zip({kernel_name(1, 1): GOOD, "eval_results.json": '{"1": {"speedup": Infinity, "x": -1e400}}'}),
        ),
        "superscript level": ("b.jsonl", json.dumps({"level": "²", "problem_id": 1, "source": GOOD}).encode()),
        "superscript problem": ("b.jsonl", json.dumps({"level": 1, "problem_id": "1²", "source": GOOD}).encode()),
    }  # fmt: skip


BUNDLES = _bundles()


@pytest.fixture
def web(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.mark.parametrize("case", list(BUNDLES))
def test_hostile_json_in_a_bundle_is_a_clean_answer(demo_problems, api, web, case):
    name, data = BUNDLES[case]
    api.raise_request_exception = False
    response = api.post(
        "/api/submissions/",
        {"bundle": SimpleUploadedFile(name, data), "llm": "m", "problem_set": DEMO_SET},
        format="multipart",
    )
    assert response.status_code in {202, 400}, response.content[:500]
    assert isinstance(response.json()["detail" if response.status_code == 400 else "id"], str | int)
    page = web.post("/submit/", {"bundle": SimpleUploadedFile(name, data), "new_llm": "m", "problem_set": DEMO_SET})
    assert page.status_code in {302, 400}, page.content[:500]
    # Whatever was stored is valid JSON all the way down (no NaN, no Infinity, no 100,000-deep lists).
    for submission in Submission.objects.all():
        json.dumps(submission.claimed_results, allow_nan=False)


def test_nan_in_a_json_bundle_is_refused_with_the_reason(demo_problems, api):
    name, data = BUNDLES["NaN metadata"]
    response = api.post(
        "/api/submissions/", {"bundle": SimpleUploadedFile(name, data), "llm": "m", "problem_set": DEMO_SET}
    )
    assert response.status_code == 400
    assert "NaN" in response.json()["detail"]


def test_deep_eval_results_is_ignored_but_the_kernels_are_kept(demo_problems, api):
    name, data = BUNDLES["deep eval_results"]
    response = api.post(
        "/api/submissions/", {"bundle": SimpleUploadedFile(name, data), "llm": "m", "problem_set": DEMO_SET}
    )
    assert response.status_code == 202
    skipped = [r for r in response.json()["report"] if r["name"] == "eval_results.json"]
    assert "nested" in skipped[0]["reason"]


@pytest.mark.parametrize(
    "body",
    [DEEP, '{"llm": ' + DEEP + "}", '{"llm": NaN}', '{"level": Infinity}', '{"level": 1e999}'],
    ids=["deep list", "deep field", "NaN", "Infinity", "overflow"],
)
def test_hostile_json_request_body_is_a_400(demo_problems, api, staff, body):
    api.raise_request_exception = False
    response = api.post("/api/submissions/", body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["detail"]
    api.force_authenticate(staff)
    for url in ("/api/audit/import/", "/api/kernels/1/flags/"):
        assert api.post(url, body, content_type="application/json").status_code in {400, 404}


@pytest.mark.parametrize("value", ["²", "1²", "٣", "-1", "1e3", " 1", "99999999999999999999999", "1\r\n"])
def test_odd_evaluation_ids_are_a_404_not_a_500(value):
    evaluation = EvaluationFactory()
    client = Client(raise_request_exception=False)
    for url in (f"/kernels/{evaluation.kernel_id}/", f"/kernels/{evaluation.kernel_id}/result.json"):
        assert client.get(url, {"evaluation": value}).status_code == 404
    assert client.get(f"/kernels/{evaluation.kernel_id}/", {"evaluation": str(evaluation.pk)}).status_code == 200


@pytest.mark.parametrize("value", ["a\r\nSet-Cookie: x=1", "h200\n", "\x00", "é" * 60, '"; x="'])
def test_odd_hardware_in_a_query_string_is_not_a_500(db, value):
    client = Client(raise_request_exception=False)
    for url in ("/api/leaderboard.csv", "/api/leaderboard/", "/", "/api/submissions/", "/api/evaluations/"):
        response = client.get(url, {"hardware": value, "level": "²", "sort": "\r\n"})
        assert response.status_code < 500, (url, response.status_code)
        assert "Set-Cookie" not in response.get("Content-Disposition", "")


@pytest.mark.parametrize("url", ["/audit/?q=%00", "/problems/?q=a%00b", "/api/llms/?name=%00", "/?hardware=%00"])
def test_nul_in_a_query_string_is_a_400(staff, url):
    client = Client(raise_request_exception=False)
    client.force_login(staff)
    response = client.get(url)
    assert response.status_code == 400
    if url.startswith("/api/"):
        assert "NUL" in response.json()["detail"]


# --- Hardware labels: only the pools this deployment serves (EVALUATOR_HARDWARE_LABELS) ---------------------------


@pytest.mark.parametrize("hardware", ["h200", "H200", "sec-noqueue"])
def test_a_hardware_label_nobody_serves_is_a_400_naming_the_valid_ones(demo_problems, api, web, hardware):
    data = make_zip({kernel_name(1, 1): GOOD})
    response = api.post(
        "/api/submissions/",
        {"bundle": SimpleUploadedFile("run.zip", data), "llm": "m", "problem_set": DEMO_SET, "hardware": hardware},
    )
    assert response.status_code == 400
    assert "cpu" in response.json()["detail"] and "EVALUATOR_HARDWARE_LABELS" in response.json()["detail"]
    page = web.post(
        "/submit/",
        {"bundle": SimpleUploadedFile("run.zip", data), "new_llm": "m", "problem_set": DEMO_SET, "hardware": hardware},
    )
    assert page.status_code == 400 and b"EVALUATOR_HARDWARE_LABELS" in page.content
    assert not Submission.objects.exists()


def test_configured_hardware_labels_are_accepted(demo_problems, api, settings):
    settings.EVALUATOR_HARDWARE_LABELS = ["cpu", "h200"]
    for sample, hardware in enumerate(("h200", "cpu", "")):
        response = api.post(
            "/api/submissions/",
            {"bundle": SimpleUploadedFile("run.zip", make_zip({kernel_name(1, 1, sample): GOOD})), "llm": "m",
             "problem_set": DEMO_SET, "hardware": hardware},
        )  # fmt: skip
        assert response.status_code == 202, response.content
    assert sorted(Submission.objects.values_list("hardware", flat=True)) == ["cpu", "cpu", "h200"]


# --- The body cap: BUNDLE_MAX_BYTES, checked before the body is read ----------------------------------------------


class TrackedInput(io.RawIOBase):
    """A request body that records how much of it was read."""

    def __init__(self, size: int) -> None:
        self.left, self.read_bytes = size, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        n = self.left if size is None or size < 0 else min(size, self.left)
        self.left -= n
        self.read_bytes += n
        return b"x" * n

    def readline(self, size: int = -1) -> bytes:
        return self.read(size if size and size > 0 else 1024)


MULTIPART = "multipart/form-data; boundary=BoUnDaRy"


def test_an_oversized_body_is_refused_on_its_content_length_unread(demo_problems, api, web, settings):
    settings.BUNDLE_MAX_BYTES = 1000
    body = TrackedInput(100 * 1024 * 1024)
    environ = {"wsgi.input": body, "CONTENT_LENGTH": str(100 * 1024 * 1024)}
    response = api.generic("POST", "/api/submissions/", content_type=MULTIPART, **environ)
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    assert "BUNDLE_MAX_BYTES" in response.json()["detail"] and "1000" in response.json()["detail"]
    page = web.generic("POST", "/submit/", content_type=MULTIPART, **environ)
    assert page.status_code == 413 and page["Content-Type"].startswith("text/html")
    assert b"BUNDLE_MAX_BYTES" in page.content and b"<html" in page.content
    assert body.read_bytes == 0
    assert not Submission.objects.exists()


def test_a_chunked_body_is_cut_off_at_the_cap(demo_problems, api, web, settings):
    settings.BUNDLE_MAX_BYTES = 1000
    for client, path in ((api, "/api/submissions/"), (web, "/submit/")):
        body = TrackedInput(5 * 1024 * 1024)
        environ = {"wsgi.input": body, "wsgi.input_terminated": True}
        response = client.generic("POST", path, content_type=MULTIPART, **environ)
        assert response.status_code == 413
        assert body.read_bytes < 1024 * 1024  # the cap plus the form's envelope, not the 5 MiB sent
    assert not Submission.objects.exists()


def test_a_bundle_over_the_cap_inside_a_small_body_is_a_413_too(demo_problems, api, web, settings):
    settings.BUNDLE_MAX_BYTES = 1000
    data = make_zip({kernel_name(1, 1): GOOD, "padding.bin": random.Random(0).randbytes(2000)})
    assert len(data) > 1000
    response = api.post("/api/submissions/", {"bundle": SimpleUploadedFile("run.zip", data), "llm": "m"})
    assert response.status_code == 413 and "BUNDLE_MAX_BYTES" in response.json()["detail"]
    page = web.post("/submit/", {"bundle": SimpleUploadedFile("run.zip", data), "new_llm": "m"})
    assert page.status_code == 413 and b"BUNDLE_MAX_BYTES" in page.content
    assert not Submission.objects.exists()
