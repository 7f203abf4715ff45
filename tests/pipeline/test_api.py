"""REST API: status codes, permissions, throttling, progress, CSV, re-runs, filters and the OpenAPI schema."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from catalogue.models import Kernel, Submission
from evaluator.models import Evaluation
from leaderboard.services.tokens import api_token_create
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip, record

pytestmark = pytest.mark.django_db


def upload(client: APIClient, data: bytes, name: str = "run.zip", **fields):
    payload = {"bundle": SimpleUploadedFile(name, data), "llm": "model-a", "problem_set": DEMO_SET, **fields}
    return client.post("/api/submissions/", payload, format="multipart")


def zip_of(*kernels: tuple[int, int, int]) -> bytes:
    return make_zip({kernel_name(*k): demo_kernel(*k) for k in kernels})


def test_upload_needs_a_token(demo_problems, anon):
    response = upload(anon, zip_of((1, 1, 0)))
    assert response.status_code == 401
    assert not Submission.objects.exists()


def test_upload_returns_202_with_report_and_location(demo_problems, api, user):
    data = make_zip({kernel_name(1, 1): demo_kernel(1, 1), kernel_name(9, 9): demo_kernel(1, 1), "x.txt": "hi"})
    response = upload(api, data, organisation="Lab", notes="first try")
    assert response.status_code == 202, response.content
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert body["url"] == f"http://testserver/api/submissions/{submission.pk}/" == response["Location"]
    assert body["page_url"] == f"http://testserver/submissions/{submission.pk}/"
    assert (body["status"], body["kernel_count"]) == ("received", 1)
    assert {r["name"]: r["status"] for r in body["report"]} == {
        kernel_name(1, 1): "accepted", kernel_name(9, 9): "skipped", "x.txt": "skipped"
    }  # fmt: skip
    assert submission.uploader == user and submission.llm.organisation == "Lab" and submission.notes == "first try"


def test_single_py_upload_uses_level_and_problem_fields(demo_problems, api):
    response = upload(api, demo_kernel(1, 3).encode(), name="kernel.py", level=1, problem_id=3, sample=2)
    assert response.status_code == 202, response.content
    kernel = Kernel.objects.get()
    assert (kernel.problem.key, kernel.sample) == ("L1/3", 2)


@pytest.mark.parametrize(
    ("data", "name", "detail"),
    [
        (make_zip({"../" + kernel_name(1, 1): "x"}), "run.zip", "leaves its folder"),
        (make_zip({kernel_name(5, 5): demo_kernel(1, 1)}), "run.zip", "No kernel in the bundle matches"),
        (b"\xff\xfe", "k.jsonl", "not UTF-8"),
        (b"hello", "notes.txt", "Unknown bundle format"),
    ],
)
def test_rejected_bundles_answer_400_with_detail_and_report(demo_problems, api, data, name, detail):
    response = upload(api, data, name=name)
    assert response.status_code == 400
    body = response.json()
    assert detail in body["detail"] and isinstance(body["report"], list)
    assert not Submission.objects.exists() and not Kernel.objects.exists()


def test_oversize_upload_is_refused(demo_problems, api, settings):
    settings.BUNDLE_MAX_BYTES = 1000
    response = upload(api, b"#" * 2000, name="k.py", level=1, problem_id=1)
    assert response.status_code == 413
    assert "larger than the 1000-byte limit (BUNDLE_MAX_BYTES)" in response.json()["detail"]


def test_missing_fields_are_400(demo_problems, api):
    response = api.post("/api/submissions/", {"llm": "x"}, format="multipart")
    body = response.json()
    assert response.status_code == 400 and "bundle" in body["errors"] and body["detail"].startswith("bundle:")


def test_uploads_are_throttled_per_user(demo_problems, api, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "submissions": "2/hour"}}  # fmt: skip
    codes = [upload(api, zip_of((1, k, 0))).status_code for k in (1, 2, 3)]
    assert codes == [202, 202, 429]
    assert api.get("/api/submissions/").status_code == 200  # reads are not throttled by this scope


def test_anonymous_can_read_progress(demo_problems, api, anon, stand_in, sent):
    from evaluator.tasks.evaluation import evaluate_kernel

    sub_id = upload(api, zip_of((1, 1, 0), (1, 2, 0))).json()["id"]
    first = Evaluation.objects.filter(kernel__submission_id=sub_id).order_by("pk").first()
    stand_in.script = [record(speedup=1.5)]
    evaluate_kernel.apply(args=[first.pk])
    body = anon.get(f"/api/submissions/{sub_id}/").json()
    progress = body["progress"]
    assert (body["status"], body["evaluated_count"], body["kernel_count"]) == ("running", 1, 2)
    assert (progress["done"], progress["total"], progress["queued"], progress["percent"]) == (1, 2, 1, 50)
    assert progress["queue_position"] == 0
    assert [k["status"] for k in progress["kernels"]] == ["done", "queued"]
    assert progress["kernels"][0]["speedup"] == 1.5 and progress["kernels"][0]["correct"] is True


def test_queue_position_counts_earlier_queued_work_on_the_same_queue(demo_problems, api, anon, settings):
    settings.EVALUATOR_HARDWARE_LABELS = ["cpu", "h200"]
    upload(api, zip_of((1, 1, 0), (1, 2, 0)), hardware="cpu")
    assert upload(api, zip_of((1, 1, 0)), hardware="h200").status_code == 202  # another queue: not ahead
    third = upload(api, zip_of((1, 3, 0)), hardware="cpu").json()["id"]
    assert anon.get(f"/api/submissions/{third}/").json()["progress"]["queue_position"] == 2


def test_results_csv(demo_problems, api, anon, stand_in, sent):
    from evaluator.tasks.evaluation import evaluate_kernel

    sub_id = upload(api, zip_of((1, 1, 0), (1, 2, 0)), llm="=cmd|calc").json()["id"]
    stand_in.script = [record(speedup=2.0), record(correct=False)]
    for ev in Evaluation.objects.filter(kernel__submission_id=sub_id).order_by("pk"):
        evaluate_kernel.apply(args=[ev.pk])
    for url in (f"/api/submissions/{sub_id}/results.csv", f"/submissions/{sub_id}/results.csv"):
        response = anon.get(url, HTTP_ACCEPT="text/csv")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert [(r["problem_id"], r["correct"], r["eligible"]) for r in rows] == [
            ("1", "True", "True"),
            ("2", "False", "False"),
        ]
        assert rows[0]["speedup"] == "2.0" and rows[0]["llm"] == "'=cmd|calc"  # formula injection defused
    assert anon.get("/api/submissions/999999/results.csv").status_code == 404


def test_rerun_is_staff_only(demo_problems, api, staff, sent):
    sub_id = upload(api, zip_of((1, 1, 0))).json()["id"]
    ev = Evaluation.objects.get(kernel__submission_id=sub_id)
    assert api.post(f"/api/evaluations/{ev.pk}/rerun/").status_code == 403
    assert api.post(f"/api/submissions/{sub_id}/rerun/").status_code == 403
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=staff)}")
    response = admin.post(f"/api/evaluations/{ev.pk}/rerun/")
    assert response.status_code == 202 and response.json()["status"] == "queued" and response.json()["id"] != ev.pk
    response = admin.post(f"/api/submissions/{sub_id}/rerun/")
    assert response.status_code == 202 and len(response.json()["evaluation_ids"]) == 1
    assert Evaluation.objects.filter(kernel__submission_id=sub_id).count() == 3
    assert Evaluation.objects.filter(kernel__submission_id=sub_id, is_current=True).count() == 1


def test_read_endpoints_and_filters(demo_problems, api, anon, stand_in, sent):
    from evaluator.tasks.evaluation import evaluate_kernel

    sub_id = upload(api, zip_of((1, 1, 0), (2, 1, 0))).json()["id"]
    stand_in.script = [record(), record()]
    for ev in Evaluation.objects.filter(kernel__submission_id=sub_id):
        evaluate_kernel.apply(args=[ev.pk])
    problems = anon.get("/api/problems/", {"level": 1, "problem_set": DEMO_SET, "active": "true"}).json()
    assert problems["count"] == 3 and {p["level"] for p in problems["results"]} == {1}
    problem = anon.get(f"/api/problems/{problems['results'][0]['id']}/").json()
    assert "class Model" in problem["source"]
    assert anon.get("/api/llms/", {"name": "model"}).json()["results"][0]["name"] == "model-a"
    kernels = anon.get("/api/kernels/", {"submission": sub_id, "level": 2}).json()
    assert kernels["count"] == 1 and "source" not in kernels["results"][0]
    assert "class ModelNew" in anon.get(f"/api/kernels/{kernels['results'][0]['id']}/").json()["source"]
    evaluations = anon.get("/api/evaluations/", {"submission": sub_id, "correct": "true"}).json()
    assert evaluations["count"] == 2 and "result" not in evaluations["results"][0]
    detail = anon.get(f"/api/evaluations/{evaluations['results'][0]['id']}/").json()
    assert detail["result"]["timing"]["method"] == "perf_counter"
    assert [d["name"] for d in detail["distributions"]] == ["D1", "D2", "D3", "D4"]
    assert anon.get("/api/submissions/", {"status": "done"}).json()["count"] == 1


def test_writes_on_read_only_endpoints_are_refused(demo_problems, api):
    assert api.post("/api/problems/", {}).status_code == 405
    assert api.delete("/api/llms/1/").status_code in {404, 405}


def test_schema_and_docs(anon):
    schema = anon.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/submissions/{id}/rerun/" in schema.content
    assert anon.get("/api/docs/").status_code == 200
