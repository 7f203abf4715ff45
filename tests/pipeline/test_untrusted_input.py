"""Untrusted input never answers 500 (issue 15): hostile JSON in bundles and request bodies, odd query strings,
hardware labels nobody serves, and request bodies over the upload cap (refused before they are read)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.models import Submission
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
