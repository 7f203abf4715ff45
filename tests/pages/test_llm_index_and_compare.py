"""The LLM index says who made an LLM and which boards its results are on; /compare/ opens on two LLMs of the
board."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.models import LLM
from tests.factories import ProblemFactory

pytestmark = pytest.mark.django_db

GPU_FIXTURE = Path(__file__).resolve().parents[2] / "leaderboard" / "fixtures" / "h200_e2e.json"


def test_the_results_fixture_names_an_organisation_not_a_hardware_string(client):
    call_command("load_gpu_results", str(GPU_FIXTURE), stdout=open(os.devnull, "w"))
    llm = LLM.objects.get(name__startswith="e2e-h200")
    assert not re.search(r"H200|torch|CUDA", llm.organisation), llm.organisation
    html = client.get("/llms/").content.decode()
    filter_options = html.split('name="organisation"')[1].split("</select>")[0]
    assert "H200" not in filter_options and "torch" not in filter_options
    boards = html.split(f'href="/llms/{llm.pk}/"')[1].split("data-boards>")[1].split("</td>")[0]
    assert f'href="/llms/{llm.pk}/?hardware=h200&amp;problem_set=kernelbench-main"' in boards
    assert "h200 &middot; kernelbench-main" in boards and "25 kernels" in boards


def test_an_llm_without_results_says_so(client):
    LLM.objects.create(name="idle")
    html = client.get("/llms/").content.decode()
    assert "Results on" in html and "no results yet" in html


@pytest.fixture
def two_on_a_board(add_sample):
    problem = ProblemFactory()
    for name, speedup in (("first", 2.0), ("second", 1.5), ("third", 1.1)):
        add_sample(name, problem, speedup=speedup)
    add_sample("elsewhere", problem, speedup=5.0, hardware="b200")
    return {name: LLM.objects.get(name=name).pk for name in ("first", "second", "third")}


def selected(html: str, side: str) -> str:
    select = html.split(f'id="compare-{side}"')[1].split("</select>")[0]
    found = re.search(r'<option value="\d+" selected>([^<]+)</option>', select)
    return found.group(1) if found else ""


def test_compare_opens_on_the_boards_two_best_ranked_llms(client, two_on_a_board):
    html = client.get("/compare/", {"hardware": "h200"}).content.decode()
    assert (selected(html, "a"), selected(html, "b")) == ("first", "second")
    assert 'id="compare-preselected"' in html and 'id="compare-table"' in html
    # From an LLM's page (?a=): the other side is the best-ranked other LLM.
    html = client.get("/compare/", {"hardware": "h200", "a": two_on_a_board["third"]}).content.decode()
    assert (selected(html, "a"), selected(html, "b")) == ("third", "first")
    # Chosen with the form, an empty side stays empty.
    html = client.get("/compare/", {"hardware": "h200", "a": two_on_a_board["third"], "b": ""}).content.decode()
    assert selected(html, "b") == "" and "Pick two LLMs." in html


def test_compare_on_a_board_with_one_llm_says_why_it_cannot_pick_two(client, two_on_a_board):
    html = client.get("/compare/", {"hardware": "b200"}).content.decode()
    assert selected(html, "a") == "elsewhere" and "Only one LLM has results on the b200 board" in html


def test_compare_calls_identical_sources_identical_whatever_their_timings(client, add_sample):
    """Byte-identical kernels timed on a busy CPU read 0.205x and 0.782x with intervals apart: one kernel measured
    twice, so no winner; a copy that differs only in comments is the same code."""
    from catalogue.fingerprints import source_fingerprint
    from tests.factories import KERNEL_SOURCE

    first, second = ProblemFactory(level=1, problem_id=1), ProblemFactory(level=1, problem_id=2)
    evaluations = [
        add_sample("mine", first, speedup=0.205, source=KERNEL_SOURCE, speedup_ci_low=0.201, speedup_ci_high=0.209),
        add_sample("yours", first, speedup=0.782, source=KERNEL_SOURCE, speedup_ci_low=0.781, speedup_ci_high=0.784),
        add_sample(
            "mine", second, speedup=0.5, source=KERNEL_SOURCE + "# mine\n", speedup_ci_low=0.4, speedup_ci_high=0.6
        ),
        add_sample("yours", second, speedup=0.9, source=KERNEL_SOURCE, speedup_ci_low=0.89, speedup_ci_high=0.91),
    ]
    for evaluation in evaluations:  # as the upload service fingerprints every kernel
        kernel = evaluation.kernel
        type(kernel).objects.filter(pk=kernel.pk).update(fingerprint=source_fingerprint(kernel.source))
    a, b = LLM.objects.get(name="mine").pk, LLM.objects.get(name="yours").pk
    html = " ".join(client.get("/compare/", {"a": a, "b": b, "hardware": "h200"}).content.decode().split())
    results = re.findall(r"<td data-result data-label=\"Faster\">(.*?)</td>", html)
    assert len(results) == 2 and "identical source" in results[0] and "same code" in results[1]
    assert "yours" not in results[0] + results[1] and "mine" not in results[0] + results[1]  # no winner
    assert "mine wins 0, yours wins 0, 2 with the same source on both sides" in html
    assert "<strong>0.782×</strong>" not in html
