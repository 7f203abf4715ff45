"""The view a page opens on: the problem set with problems for the deployment's upload hardware (a GPU results
fixture never moves a CPU install), and an LLM page on a view that holds that LLM's kernels."""

from __future__ import annotations

import pytest

from leaderboard.forms import SubmitForm
from leaderboard.selectors.problem_sets import problem_set_default
from tests.factories import ProblemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def cpu_install_with_gpu_results(settings):
    """`make run` on a CPU machine: the demo set, then the H200 fixture's full-size set (imported later)."""
    settings.PROBLEM_SET_DEFAULT = ""
    settings.EVALUATOR_DEFAULT_HARDWARE = "cpu"
    settings.EVALUATOR_HARDWARE_LABELS = ["cpu"]
    demo = [ProblemFactory(problem_set="demo", is_demo=True, level=1, problem_id=i) for i in (1, 2)]
    main = [ProblemFactory(problem_set="kernelbench-main", level=1, problem_id=i) for i in (1, 2)]
    return demo, main


def test_a_gpu_fixture_never_changes_a_cpu_install_upload_default(cpu_install_with_gpu_results):
    assert problem_set_default() == "demo"
    assert problem_set_default(hardware="h200") == "kernelbench-main"
    assert SubmitForm().fields["problem_set"].initial == "demo"


def test_an_upload_naming_no_set_goes_to_the_set_for_its_hardware(cpu_install_with_gpu_results):
    from leaderboard.services.submissions import submission_create
    from tests.factories import KERNEL_SOURCE

    submission = submission_create(
        uploader=None, llm_name="m", filename="k.py", data=KERNEL_SOURCE.encode(), level=1, problem_id=1
    )
    assert submission.problem_set == "demo" and submission.hardware == "cpu"


def test_an_explicit_setting_still_wins(cpu_install_with_gpu_results, settings):
    settings.PROBLEM_SET_DEFAULT = "kernelbench-main"
    assert problem_set_default() == "kernelbench-main"
    settings.PROBLEM_SET_DEFAULT = "not-imported"  # a set with no problems: the hardware's set, not a dead default
    assert problem_set_default() == "demo"


def test_nothing_imported_names_the_set_an_import_would_make(settings):
    settings.PROBLEM_SET_DEFAULT = ""
    assert problem_set_default(hardware="cpu") == "demo"
    assert problem_set_default(hardware="h200") == "kernelbench-main"


def test_pages_open_on_the_cpu_demo_beside_gpu_results(client, add_sample, cpu_install_with_gpu_results):
    demo, main = cpu_install_with_gpu_results
    add_sample("demo-llm", demo[0], hardware="cpu")
    add_sample("gpu-llm", main[0], hardware="h200")
    add_sample("stray-llm", main[1], hardware="cpu")  # someone's full-size kernel judged on the CPU
    assert client.get("/api/leaderboard/").json()["problem_set"] == "demo"
    assert client.get("/api/leaderboard/").json()["hardware"] == "cpu"
    assert client.get("/api/leaderboard/?hardware=h200").json()["problem_set"] == "kernelbench-main"
    board = client.get("/").content.decode()
    assert "Problem set <strong>demo</strong>" in board and "demo-llm" in board
    compare = client.get("/compare/").content.decode()
    assert '<option value="demo" selected>' in compare


def test_an_llm_page_opens_on_a_view_with_its_kernels(client, add_sample, cpu_install_with_gpu_results):
    demo, main = cpu_install_with_gpu_results
    cpu_eval = add_sample("demo-llm", demo[0], hardware="cpu")
    gpu_eval = add_sample("gpu-llm", main[0], hardware="h200")
    add_sample("gpu-llm", main[1], sample=1, hardware="h200")
    gpu_page = client.get(f"/llms/{gpu_eval.kernel.llm_id}/").content.decode()
    assert "Metrics on h200 (kernelbench-main)" in gpu_page and "Kernels (2 on h200, kernelbench-main)" in gpu_page
    assert "No evaluated kernels" not in gpu_page
    # The board's link names the hardware only: the set is still one the LLM has kernels in.
    linked = client.get(f"/llms/{gpu_eval.kernel.llm_id}/?hardware=h200").content.decode()
    assert "Kernels (2 on h200, kernelbench-main)" in linked
    demo_page = client.get(f"/llms/{cpu_eval.kernel.llm_id}/").content.decode()
    assert "Kernels (1 on cpu, demo)" in demo_page and "No evaluated kernels" not in demo_page


def test_compare_says_not_distinguishable_when_intervals_overlap(client, add_sample):
    from tests.factories import LLMFactory

    p1, p2, p3 = (ProblemFactory(level=1, problem_id=i) for i in (1, 2, 3))
    # The same kernel timed twice on a busy CPU: 0.957x and 0.139x, but intervals that overlap.
    a1 = add_sample("A", p1, speedup=0.957, speedup_ci_low=0.12, speedup_ci_high=1.1)
    add_sample("B", p1, speedup=0.139, speedup_ci_low=0.1, speedup_ci_high=0.98)
    add_sample("A", p2, speedup=2.0)  # 1.94-2.06 against 0.97-1.03: A is faster
    add_sample("B", p2, speedup=1.0)
    add_sample("A", p3, speedup=1.0)
    add_sample("B", p3, speedup=1.0, correct=False)  # only A counts
    a, b = a1.kernel.llm, LLMFactory(name="B")
    html = " ".join(
        client.get(f"/compare/?a={a.pk}&b={b.pk}&hardware=h200&problem_set=kernelbench-main").content.decode().split()
    )
    assert "A wins 2, B wins 0, 1 not distinguishable" in html
    assert html.count("not distinguishable</span>") == 1
    assert "<strong>0.957×</strong>" not in html and "<strong>2.00×</strong>" in html


def test_the_api_root_lists_the_endpoints(client):
    response = client.get("/api/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["leaderboard"].endswith("/api/leaderboard/") and body["submissions"].endswith("/api/submissions/")
    assert body["schema"].endswith("/api/schema/") and "submissions" in body["about"]
    for key in ("llms", "problems", "kernels", "evaluations", "docs"):
        assert client.get(body[key].replace("http://testserver", "")).status_code == 200


def test_the_api_root_lists_every_collection_and_the_account_endpoints(client):
    """Every list route of every app's router, and the account's budget and webhook, are on /api/."""
    from django.urls import get_resolver, reverse

    body = client.get("/api/", HTTP_ACCEPT="application/json").json()
    listed = {url.replace("http://testserver", "") for key, url in body.items() if key != "about"}
    names = [n for n in get_resolver().reverse_dict if isinstance(n, str) and n.startswith("api-")]
    wanted = sorted(n for n in names if n.endswith("-list") or n == "api-webhook")
    assert "api-budget-list" in wanted and "api-webhook" in wanted
    assert [n for n in wanted if reverse(n) not in listed] == []
    assert body["budget"].endswith("/api/budget/") and body["webhook"].endswith("/api/webhook/")
    assert "token" in body["about"]["budget"] and "webhook" in body["about"]["webhook"]
