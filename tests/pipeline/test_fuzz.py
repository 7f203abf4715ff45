"""Property-based fuzzing of uploads: whatever arrives, the API answers 202 or 400 (never 500), and a submission is
either stored whole (kernel_count kernels, each with one queued evaluation) or not at all."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from catalogue.models import Kernel, Submission
from evaluator.models import Evaluation
from tests.pipeline.helpers import demo_kernel, jsonl, kernel_name, leaderboard_json, make_tar, make_zip

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,  # reproducible in CI; the seed sweeps the same inputs every run
)
GOOD = demo_kernel(1, 1)

names = st.one_of(
    st.sampled_from(["run.zip", "run.tar.gz", "run.tar", "b.json", "b.jsonl", "k.py", "bundle", ""]),
    st.text(min_size=1, max_size=30),
)
member_names = st.one_of(
    st.builds(kernel_name, st.integers(0, 4), st.integers(0, 5), st.integers(0, 3)),
    st.builds(
        lambda p, k: p + k,
        st.sampled_from(["../", "/", "a/../../", "run/", "C:/", "\\\\", ""]),
        st.builds(kernel_name, st.integers(1, 2), st.integers(1, 3)),
    ),  # fmt: skip
    st.text(min_size=1, max_size=40),
)
contents = st.one_of(st.just(GOOD), st.binary(max_size=200), st.text(max_size=200))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
rows = st.fixed_dictionaries(
    {},
    optional={
        "level": st.one_of(st.integers(-1, 4), st.text(max_size=3), st.booleans()),
        "problem_id": st.one_of(st.integers(-1, 5), st.text(max_size=3), st.none()),
        "sample": st.one_of(st.integers(-1, 3), st.floats()),
        "source": st.one_of(st.just(GOOD), st.text(max_size=50), json_values),
        "task_id": st.integers(0, 4),
        "custom_code": st.just(GOOD),
    },
)
archives = st.builds(
    lambda files, kind: make_zip(files) if kind == "zip" else make_tar(files, gz=kind == "tgz"),
    st.dictionaries(member_names, contents, max_size=6),
    st.sampled_from(["zip", "tgz", "tar"]),
)
documents = st.one_of(
    st.builds(
        lambda k: leaderboard_json(k),
        st.dictionaries(
            st.text(max_size=30) | member_names, json_values | contents.filter(lambda c: isinstance(c, str)), max_size=5
        ),
    ),
    st.builds(jsonl, st.lists(rows, max_size=6)),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
)
# Near-valid archives: one good kernel plus random extras, so the accept-with-report path is exercised too.
mixed_archives = st.builds(
    lambda files, kind: make_zip({kernel_name(1, 2): GOOD, **files}) if kind == "zip"
    else make_tar({kernel_name(1, 2): GOOD, **files}, gz=True),
    st.dictionaries(member_names.filter(lambda n: ".." not in n and not n.startswith(("/", "C:", "\\"))), contents,
                    max_size=5),
    st.sampled_from(["zip", "tgz"]),
)  # fmt: skip
payloads = st.one_of(st.binary(max_size=400), archives, mixed_archives, documents)


def assert_whole_or_nothing(before: tuple[int, int, int], response) -> None:
    assert response.status_code in {200, 202, 400}, response.content
    event(f"status {response.status_code}")
    after = (Submission.objects.count(), Kernel.objects.count(), Evaluation.objects.count())
    if response.status_code == 200:  # the same kernels (by fingerprint) as an earlier upload: nothing new stored
        assert response.json()["duplicate"] is True and after == before
        return
    if response.status_code == 400:
        body = response.json()
        assert after == before
        assert isinstance(body, dict)
        return
    submission = Submission.objects.get(pk=response.json()["id"])
    kernels = Kernel.objects.filter(submission=submission).count()
    assert kernels == submission.kernel_count > 0
    assert Evaluation.objects.filter(kernel__submission=submission, status="queued").count() == kernels
    assert after == (before[0] + 1, before[1] + kernels, before[2] + kernels)
    accepted = [r for r in submission.report if r["status"] == "accepted"]
    assert len(accepted) == kernels


@pytest.fixture
def fuzz_api(api, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "submissions": "100000/hour"}}  # fmt: skip
    return api


def post(api, name: str, data: bytes, extra: dict):
    before = (Submission.objects.count(), Kernel.objects.count(), Evaluation.objects.count())
    upload = SimpleUploadedFile(name or "x", data)
    response = api.post("/api/submissions/", {"bundle": upload, "llm": "fuzz", "problem_set": "demo", **extra},
                        format="multipart")  # fmt: skip
    assert_whole_or_nothing(before, response)


@FUZZ
@given(name=names, data=payloads)
def test_any_upload_is_accepted_whole_or_rejected_cleanly(demo_problems, fuzz_api, name, data):
    post(fuzz_api, name, data, {})


@FUZZ
@given(
    data=st.one_of(st.just(GOOD.encode()), st.binary(max_size=100)),
    level=st.one_of(st.none(), st.integers(-2, 12), st.text(max_size=4)),
    problem_id=st.one_of(st.none(), st.integers(-2, 6), st.text(max_size=4)),
    hardware=st.one_of(st.just("cpu"), st.text(max_size=60)),
    llm=st.text(max_size=250),
)
def test_any_form_fields_are_accepted_whole_or_rejected_cleanly(
    demo_problems, fuzz_api, data, level, problem_id, hardware, llm
):
    extra = {"hardware": hardware, "llm": llm}
    extra.update({k: v for k, v in {"level": level, "problem_id": problem_id}.items() if v is not None})
    post(fuzz_api, "k.py", data, extra)
