"""The leaderboard page, its filters and sorting, its API twin and the plotly.js it serves."""

from __future__ import annotations

import csv
import gzip
import io
import re

import pytest
from django.urls import reverse

from evaluator.models import Baseline
from tests.factories import BaselineFactory, ProblemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_board(add_sample):
    problems = [ProblemFactory(level=level, problem_id=i) for level in (1, 2, 3) for i in (1, 2)]
    for p in problems:
        add_sample("fast-llm", p, speedup=3.0 if p.level == 1 else 1.5, memory=2.0)
        add_sample("slow-llm", p, speedup=0.5, memory=0.5)
        BaselineFactory(problem=p, precision=Baseline.Precision.TF32, median_ms=1.0)
        BaselineFactory(problem=p, precision=Baseline.Precision.FP32, median_ms=2.0)
    ProblemFactory(level=2, problem_id=80, active=False, inactive_reason="Reference output is always zero")
    return problems


def row_names(html: str) -> list[str]:
    return re.findall(r'<tr class="(?:llm|baseline)-row" data-name="([^"]+)"', html)


def test_board_shows_llms_baselines_and_metadata(client, small_board):
    response = client.get(reverse("leaderboard:index"))
    html = response.content.decode()
    assert response.status_code == 200
    # Default order: fast_1 over the whole set; ties (0 %) keep LLMs in rank order, then the baselines.
    assert row_names(html) == ["fast-llm", "slow-llm", "PyTorch eager (TF32)", "PyTorch eager (FP32)"]
    assert "1.89×" in html  # fast-llm overall: geomean(3, 3, 1.5, 1.5, 1.5, 1.5)
    assert 'class="badge badge-baseline">baseline' in html
    assert "kernelbench-main" in html and "h200" in html  # problem set and hardware shown
    assert "L2/80" in html and "Reference output is always zero" in html  # inactive problem listed
    assert "Synthetic demo data" not in html
    assert 'id="chart-memory-speedup"' in html and 'id="chart-heatmap"' in html
    assert reverse("leaderboard:plotly-js") in html


def test_level_filter_and_server_side_sort(client, small_board):
    html = client.get(reverse("leaderboard:index"), {"level": "1", "sort": "speedup"}).content.decode()
    # The LLMs sorted, the baselines under them in their own order whatever the sort.
    assert row_names(html) == ["slow-llm", "fast-llm", "PyTorch eager (TF32)", "PyTorch eager (FP32)"]
    assert "3.00×" in html
    assert re.search(r'data-key="speedup"[^>]*aria-sort="ascending"', html)
    # The active header links to the opposite direction; the level filter is kept.
    assert re.search(r'href="\?level=1&amp;sort=-speedup"', html)
    html = client.get(reverse("leaderboard:index"), {"sort": "name"}).content.decode()
    assert row_names(html) == ["fast-llm", "slow-llm", "PyTorch eager (TF32)", "PyTorch eager (FP32)"]


def test_unknown_hardware_renders_an_empty_board(client, small_board):
    response = client.get(reverse("leaderboard:index"), {"hardware": "nope"})
    assert response.status_code == 200
    assert "No evaluated kernels for this selection yet." in response.content.decode()


def test_empty_database_renders(client, db):
    response = client.get(reverse("leaderboard:index"))
    assert response.status_code == 200
    assert "No evaluated kernels" in response.content.decode()


def test_synthetic_hardware_shows_a_banner(client, add_sample):
    add_sample("s", ProblemFactory(), hardware="synthetic-h200")
    html = client.get(reverse("leaderboard:index"), {"hardware": "synthetic-h200"}).content.decode()
    assert "Synthetic demo data." in html


def test_api_returns_the_rows_the_page_shows(client, small_board):
    page = client.get(reverse("leaderboard:index"), {"level": "2"}).content.decode()
    data = client.get(reverse("leaderboard-api"), {"level": "2"}).json()
    assert data["level"] == 2 and data["hardware"] == "h200" and data["problem_set"] == "kernelbench-main"
    assert [r["name"] for r in data["rows"]] == row_names(page)
    fast = data["rows"][0]
    assert fast["rank"] == 1 and fast["kind"] == "llm"
    assert fast["speedup"] == pytest.approx(1.5) and fast["fast_p"]["1"] == pytest.approx(100.0)
    assert fast["memory_efficiency"] == pytest.approx(2.0)


def test_api_hardware_filter_and_csv(client, small_board):
    assert client.get(reverse("leaderboard-api"), {"hardware": "cpu"}).json()["rows"] == []
    response = client.get(reverse("leaderboard-csv"), {"level": "1"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["name"] for r in rows] == ["fast-llm", "slow-llm", "PyTorch eager (TF32)", "PyTorch eager (FP32)"]
    assert float(rows[0]["speedup"]) == pytest.approx(3.0)
    assert float(rows[0]["fast_1_pct"]) == pytest.approx(100.0)
    assert rows[2]["correctness_pct"] == ""  # a baseline row


def test_csv_neutralises_spreadsheet_formulas(client, add_sample):
    add_sample("=HYPERLINK(1)", ProblemFactory())
    text = client.get(reverse("leaderboard-csv")).content.decode()
    assert "'=HYPERLINK(1)" in text


def test_openapi_schema_documents_the_ranking_endpoint(client, db):
    response = client.get(reverse("api-schema"))
    assert response.status_code == 200
    assert "/api/leaderboard/" in response.content.decode()


def test_plotly_js_is_served_from_the_package(client, db):
    response = client.get(reverse("leaderboard:plotly-js"), HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "immutable" in response["Cache-Control"]
    body = gzip.decompress(response.content)
    assert b"plotly.js" in body[:2000] and len(body) > 1_000_000
    plain = client.get(reverse("leaderboard:plotly-js"))
    assert plain.content == body


def test_board_queries_do_not_grow_with_data(client, add_sample, django_assert_max_num_queries):
    problems = [ProblemFactory(level=1 + i % 3, problem_id=i) for i in range(1, 31)]
    for llm in ("a", "b", "c"):
        for p in problems[:5]:
            add_sample(llm, p, 0, speedup=1.2)
    # fingerprint, choices (2: results, problem sets), evaluations, baselines, inactive problems, stacks measured
    with django_assert_max_num_queries(8):
        assert client.get("/").status_code == 200
    for llm in ("a", "b", "c", "d", "e"):
        for p in problems:
            for sample in (1, 2):
                add_sample(llm, p, sample, speedup=0.9)
    with django_assert_max_num_queries(8):
        assert client.get("/?level=2").status_code == 200
    with django_assert_max_num_queries(1):  # cached: only the fingerprint
        assert client.get("/?level=3&sort=name").status_code == 200
    with django_assert_max_num_queries(1):
        assert client.get(reverse("leaderboard-api")).status_code == 200


def test_a_baseline_row_says_what_its_figures_are_and_shows_no_fast_p(client, small_board):
    html = client.get(reverse("leaderboard:index")).content.decode()
    group = html.split('id="baseline-group"')[1].split("</tr>")[0]
    assert "not ranked" in group and "TF32 eager time / their time" in group
    fp32 = html.split('data-name="PyTorch eager (FP32)">')[1].split("</tr>")[0]
    before_speedup = fp32.split('data-col="speedup"')[0]
    assert re.findall("([0-9.]+)\u202f%", before_speedup) == ["100.0"]  # its coverage only: no Fast@p, correct %
    assert 'data-label="TF32 time / its time"' in fp32 and "0.500× <small" in fp32 and "vs TF32" in fp32
    assert 'data-label="Fast@1 (ranking)"' not in fp32
