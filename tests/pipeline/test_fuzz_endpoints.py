"""Property-based: no 5xx from any endpoint, whatever arrives ("no 500s").

- Every read endpoint of the URLconf (pages, JSON, CSV, API list and detail; enumerated, not listed by hand) gets
  generated query strings: Unicode digits ("²"), CR/LF, NUL, signs, exponents, overlong numbers, invalid UTF-8.
- Both upload endpoints (the API and the web form) get generated bundles (zip, tar.gz, JSON, JSONL) whose metadata,
  ids and eval_results.json are odd: NaN/Infinity, deep nesting, Unicode digits, surrogates, NUL.
- The API gets generated JSON request bodies.

Requests go through Django's test client with DEBUG off; an exception in a view fails the example with its
traceback. Example counts are small and derandomised, so the file runs in well under a minute on 2 cores.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote_from_bytes

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from leaderboard.untrusted import storable_json
from tests.factories import AuditFlagFactory, DistributionResultFactory, EvaluationFactory
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_tar, make_zip

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
GOOD = demo_kernel(1, 1)
SKIPPED_PREFIXES = ("admin/",)  # Django's own admin; its views are Django's to fuzz


# --- The read endpoints, from the URLconf -----------------------------------------------------------------------


def _patterns(patterns, prefix: str = "", namespace: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            route = prefix + str(pattern.pattern)
            if route.startswith(SKIPPED_PREFIXES):
                continue
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _patterns(pattern.url_patterns, route, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield namespace + pattern.name, sorted(pattern.pattern.regex.groupindex)


ENDPOINTS = sorted(set((name, tuple(kwargs)) for name, kwargs in _patterns(get_resolver().url_patterns)))


@pytest.fixture
def objects(db):
    """One of everything a detail URL can name: a finished evaluation with its chain, a flag, distributions."""
    evaluation = EvaluationFactory(hardware="cpu")
    DistributionResultFactory(evaluation=evaluation, name="D1")
    flag = AuditFlagFactory(kernel=evaluation.kernel)
    kernel = evaluation.kernel
    return {
        "submission": kernel.submission_id,
        "kernel": kernel.pk,
        "llm": kernel.llm_id,
        "problem": kernel.problem_id,
        "evaluation": evaluation.pk,
        "flag": flag.pk,
    }


def _url(name: str, kwargs: tuple[str, ...], objects: dict[str, int]) -> str:
    """The URL with each id argument naming an existing object of the kind its route is about."""
    values = {}
    for arg in kwargs:
        kind = arg.removesuffix("_id") if arg != "pk" else next((k for k in objects if k in name), "kernel")
        values[arg] = objects.get(kind, 1)
    return reverse(name, kwargs=values)


@pytest.fixture
def clients(user, staff):
    signed_in = Client()
    signed_in.force_login(staff)
    return [Client(), signed_in]


KEYS = ["level", "hardware", "problem_set", "sort", "page", "evaluation", "limit", "offset", "llm", "status",
        "problem", "kernel", "submission", "correct", "is_current", "sample", "format", "ordering", "q"]  # fmt: skip
ODD = ["²", "1²", "٣", "-1", "+1", "1e3", "1.5", "NaN", "Infinity", " 1", "1\r\n", "\r\nX: y", "\x00", "%", "",
       "99999999999999999999999", "0", "1", "2", "true", "cpu", "h200", "-speedup", "é" * 80]  # fmt: skip
# Plus a UTF-8-encoded lone surrogate and an overlong "/": bytes no UTF-8 decoder accepts.
raw_bytes = st.one_of(
    st.sampled_from([v.encode() for v in ODD] + [b"\xed\xa0\x80", b"\xc0\xaf"]), st.binary(max_size=12)
)
raw_keys = st.one_of(st.sampled_from([k.encode() for k in KEYS]), st.binary(max_size=6))
query_strings = st.lists(st.tuples(raw_keys, raw_bytes), max_size=5).map(
    lambda pairs: "&".join(f"{quote_from_bytes(k)}={quote_from_bytes(v)}" for k, v in pairs)
)


SLOW = {"api-schema"}  # builds the whole OpenAPI document per request: fuzzed by one client only


def _every_key(value: bytes) -> str:
    return "&".join(f"{key}={quote_from_bytes(value)}" for key in KEYS)


# The classes of input that once gave 500s, on every key at once; then generated mixes.
@settings(FUZZ, max_examples=4)
@example(query=_every_key("²".encode()))
@example(query=_every_key(b"a\r\nSet-Cookie: x=1"))
@example(query=_every_key(b"99999999999999999999999"))
@example(query=_every_key(b"\xed\xa0\x80\x00"))
@given(query=query_strings)
def test_no_read_endpoint_answers_5xx_to_any_query_string(objects, clients, query):
    for name, kwargs in ENDPOINTS:
        url = _url(name, kwargs, objects)
        for client in clients[:1] if name in SLOW else clients:
            response = client.get(url, QUERY_STRING=query)
            assert response.status_code < 500, (url, query, response.status_code)


def test_the_endpoint_list_covers_pages_json_csv_and_the_api():
    names = {name for name, _ in ENDPOINTS}
    for expected in ("leaderboard:index", "inspector:kernel-detail", "inspector:kernel-result-json",
                     "leaderboard-csv", "leaderboard-api", "api-submission-list", "api-submission-detail",
                     "api-evaluation-list", "api-kernel-detail", "leaderboard:submission-csv"):  # fmt: skip
        assert expected in names, sorted(names)


# --- Uploads with odd metadata -----------------------------------------------------------------------------------

scalars = st.one_of(
    st.sampled_from(ODD),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _json_text(value, depth: int) -> str:
    """JSON as a careless producer writes it: NaN/Infinity tokens, lone surrogates, and `depth` extra brackets."""
    text = json.dumps(value, allow_nan=True)
    return "[" * depth + text + "]" * depth


json_texts = st.builds(_json_text, values, st.one_of(st.just(0), st.integers(1, 100), st.integers(1000, 50_000)))
ids = st.one_of(st.integers(-1, 3), st.sampled_from(ODD), st.floats(allow_nan=True))


def _leaderboard_json(metadata: str, extra_key: str, extra: str) -> bytes:
    kernels = json.dumps({"level_1_problem_1_sample_0": GOOD, extra_key: extra})
    return f'{{"metadata": {metadata}, "kernels": {kernels}}}'.encode()


def _jsonl(rows: list[tuple]) -> bytes:
    lines = []
    for level, problem_id, sample, meta in rows:
        head = json.dumps({"level": level, "problem_id": problem_id, "sample": sample, "source": GOOD}, allow_nan=True)
        lines.append(head[:-1] + f', "meta": {meta}}}')
    return "\n".join(lines).encode()


def _archive(kind: str, results: str, names: list[str]) -> bytes:
    files = {kernel_name(1, 1): GOOD, "run/eval_results.json": results, **{n: GOOD for n in names}}
    return make_zip(files) if kind == "zip" else make_tar(files, gz=True)


odd_names = st.builds(lambda a, b, c: f"level_{a}_problem_{b}_sample_{c}_kernel.py", ids, ids, ids)
bundles = st.one_of(
    st.tuples(st.just("b.json"), st.builds(_leaderboard_json, json_texts, st.text(max_size=20), st.text(max_size=20))),
    st.tuples(st.just("b.jsonl"), st.builds(_jsonl, st.lists(st.tuples(ids, ids, ids, json_texts), max_size=3))),
    st.tuples(st.just("run.zip"), st.builds(_archive, st.just("zip"), json_texts, st.lists(odd_names, max_size=2))),
    st.tuples(st.just("run.tar.gz"), st.builds(_archive, st.just("tgz"), json_texts, st.lists(odd_names, max_size=2))),
)
form_fields = st.fixed_dictionaries(
    {}, optional={"hardware": st.sampled_from(ODD), "level": ids, "problem_id": ids, "sample": ids}
)


@pytest.fixture
def uploaders(demo_problems, api, user, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "submissions": "100000/hour"}}  # fmt: skip
    web = Client()
    web.force_login(user)
    return api, web


@settings(FUZZ, max_examples=30)
@given(bundle=bundles, fields=form_fields)
def test_no_upload_answers_5xx_and_what_is_stored_is_valid_json(uploaders, bundle, fields):
    api, web = uploaders
    name, data = bundle
    fields = {k: str(v) for k, v in fields.items()}
    response = api.post("/api/submissions/", {"bundle": SimpleUploadedFile(name, data), "llm": "fuzz",
                                              "problem_set": DEMO_SET, **fields}, format="multipart")  # fmt: skip
    assert response.status_code in {200, 202, 400, 413}, response.content[:300]
    page = web.post("/submit/", {"bundle": SimpleUploadedFile(name, data), "new_llm": "fuzz-web",
                                 "problem_set": DEMO_SET, **fields})  # fmt: skip
    assert page.status_code in {200, 302, 400, 413}, page.content[:300]
    if response.status_code in {200, 202}:
        body = api.get(f"/api/submissions/{response.json()['id']}/").json()
        # Stored claims and report are strict JSON: no NaN, no Infinity, nothing a database cannot keep.
        json.dumps(body["claimed_results"], allow_nan=False)
        assert body["claimed_results"] == storable_json(body["claimed_results"])


@settings(FUZZ, max_examples=20)
@given(body=st.one_of(json_texts, st.binary(max_size=50).map(lambda b: b.decode("latin-1"))))
def test_no_json_request_body_answers_5xx(demo_problems, api, staff, objects, body):
    api.force_authenticate(staff)
    for url in ("/api/submissions/", "/api/audit/import/", f"/api/flags/{objects['flag']}/review/"):
        response = api.post(url, body, content_type="application/json")
        assert response.status_code < 500, (url, response.status_code)
        if response.status_code == 400:
            assert re.search(r"\w", json.dumps(response.json()))
