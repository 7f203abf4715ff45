"""Every public page at a phone's 390 px and a laptop's 1400 px, in Chromium, on the state a fresh `make run` leaves
(the demo set on the CPU beside the H200 results fixture), with two demo kernels evaluated by the real harness
(their records carry what a real CPU run writes: 64-hex seed digests, byte limits, nested timing parts) and one of
them with its seeds revealed (the long re-run commands).

What must hold on every page and width, not only on the pages first seen wrong:
- the document never scrolls sideways;
- a table wider than its box sits in a scroll container that shows it scrolls (the hint above it); no table is cut
  at its box's edge, and no table cell, card or card row holds content wider than itself (a badge drawn over the
  figure beside it).

Set WALK_SCREENSHOTS=<folder> to save a full-page screenshot of each page at each width there (the committed ones
are in benchmarks/results/screenshots/make-run/).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.models import LLM, Kernel, Submission
from evaluator.harness.record import Record
from evaluator.models import Evaluation
from evaluator.services.evaluations import evaluation_claim, evaluation_finish
from evaluator.services.seeds import seeds_reveal
from tests.browser.test_newcomer import REPO_ROOT
from tests.pipeline.helpers import record

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

GPU_FIXTURE = REPO_ROOT / "leaderboard" / "fixtures" / "h200_e2e.json"
WIDTHS = (390, 1400)
# Demo kernels the real harness evaluates: the shape-guard hack (fails D4: a speedup that does not count, its
# seeds revealed below) and the honest ReLU (seeds kept: the commitment is shown).
REAL = {(1, 1, 1), (1, 1, 0)}

# Everything the walk measures on one page: the document's width, and each table, cell, card or card row whose
# content is wider than its box (a table may be, inside a scroll container that says so).
LAYOUT_JS = """() => {
  const shown = (el) => {  // drawn, and not inside a visually hidden part (a phone's table header, clipped to 1 px)
    for (let a = el; a && a !== document.body; a = a.parentElement) {
      const r = a.getBoundingClientRect(), s = getComputedStyle(a);
      if (r.width <= 1 || r.height <= 1 || s.visibility === 'hidden' || (s.clip && s.clip !== 'auto')) return false;
    }
    return true;
  };
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const hint = (el) => {
    const c = getComputedStyle(el, '::before').content;
    return c && c !== 'none' && c !== 'normal';
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '') +
    ' "' + (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 50) + '"';
  const out = {scroll: document.documentElement.scrollWidth, viewport: window.innerWidth, clipped: [], spilled: []};
  for (const table of document.querySelectorAll('table')) {
    if (!shown(table)) continue;
    let box = table.parentElement;
    while (box && box !== document.body && !scrolls(box)) box = box.parentElement;
    const width = table.getBoundingClientRect().width;
    if (box && box !== document.body) {
      if (box.scrollWidth > box.clientWidth + 1 && !(box.hasAttribute('data-scrolls') && hint(box)))
        out.clipped.push(`${name(table)}: ${Math.round(width)} px in a ${box.clientWidth} px scroll box, no hint`);
    } else if (width > table.parentElement.clientWidth + 1) {
      out.clipped.push(`${name(table)}: ${Math.round(width)} px in a ${table.parentElement.clientWidth} px box`);
    }
  }
  for (const el of document.querySelectorAll('main td, main th, main .card, main figure.chart, main tr')) {
    if (!shown(el) || scrolls(el)) continue;
    const display = getComputedStyle(el).display;
    if (display === 'table-row' || display === 'table-cell' && el.scrollWidth <= el.clientWidth + 1) continue;
    if (el.scrollWidth > el.clientWidth + 1)
      out.spilled.push(`${name(el)}: content ${el.scrollWidth} px in ${el.clientWidth} px`);
  }
  return out;
}"""


@pytest.fixture
def fresh_make_run(db, settings, monkeypatch, django_user_model):
    """What `make run` leaves, as in tests/browser/test_first_view.py, but two demo kernels run through the real
    harness (the others answered in-process with a harness-shaped record), and a user with a token and an upload."""
    from evaluator.tasks.audit import audit_kernels_static
    from evaluator.tasks.evaluation import evaluate_kernel
    from leaderboard.services.tokens import api_token_create

    settings.PROBLEM_SET_DEFAULT = ""
    settings.EVALUATOR_DEFAULT_HARDWARE = "cpu"
    settings.EVALUATOR_HARDWARE_LABELS = ["cpu"]

    def evaluate(*, args, **_kw):
        evaluation = Evaluation.objects.select_related("kernel__problem").get(pk=args[0])
        kernel = evaluation.kernel
        if (kernel.problem.level, kernel.problem.problem_id, kernel.sample) in REAL:
            evaluate_kernel.apply(args=args)
            return
        claimed = evaluation_claim(evaluation_id=args[0], worker="in-process")
        evaluation_finish(evaluation=claimed, record=Record.from_dict(record(speedup=0.5 + kernel.sample)))

    monkeypatch.setattr(evaluate_kernel, "apply_async", evaluate)
    monkeypatch.setattr(audit_kernels_static, "apply_async", lambda *a, **kw: None)
    call_command("load_demo", stdout=open(os.devnull, "w"))
    call_command("load_gpu_results", str(GPU_FIXTURE), stdout=open(os.devnull, "w"))
    demo = Submission.objects.get(llm__name="demo-llm")
    hack = Kernel.objects.get(submission=demo, problem__level=1, problem__problem_id=1, sample=1)
    honest = Kernel.objects.get(submission=demo, problem__level=1, problem__problem_id=1, sample=0)
    for kernel in (hack, honest):
        evaluation = kernel.evaluations.get()
        assert evaluation.status == Evaluation.Status.DONE and evaluation.result, evaluation.error
    assert seeds_reveal(evaluation_id=hack.evaluations.get().pk)
    user = django_user_model.objects.create_user(username="newcomer-with-a-long-name", password="x-pw-98765")
    api_token_create(user=user)
    gpu_llm = LLM.objects.get(name__startswith="e2e-h200")
    return {
        "user": user,
        "demo_llm": demo.llm,
        "gpu_llm": gpu_llm,
        "demo_submission": demo,
        "hack": hack,
        "honest": honest,
        "gpu_kernel": Kernel.objects.filter(llm=gpu_llm).order_by("pk").first(),
    }


def public_pages(state: dict) -> dict[str, str]:
    demo, gpu = state["demo_llm"].pk, state["gpu_llm"].pk
    return {
        "board": "/",
        "board-level": "/?level=1",
        "board-h200": "/?hardware=h200",
        "problems": "/problems/",
        "problem": f"/problems/{state['honest'].problem_id}/",
        "llms": "/llms/",
        "llm-demo": f"/llms/{demo}/",
        "llm-gpu": f"/llms/{gpu}/",
        "compare": "/compare/",
        "compare-two": f"/compare/?a={demo}&b={gpu}",
        "kernel-revealed": f"/kernels/{state['hack'].pk}/",
        "kernel-kept": f"/kernels/{state['honest'].pk}/",
        "kernel-gpu": f"/kernels/{state['gpu_kernel'].pk}/",
        "submission": f"/submissions/{state['demo_submission'].pk}/",
        "dataset": "/dataset/",
        "submit-anonymous": "/submit/",
        "signup": "/accounts/signup/",
        "login": "/accounts/login/",
        "api-root": "/api/",
        "not-found": "/no-such-page/",
    }


SIGNED_IN_PAGES = {"account": "/account/", "submit": "/submit/"}


def walk(page, pages: dict[str, str], width: int) -> list[str]:
    problems = []
    folder = os.getenv("WALK_SCREENSHOTS")
    for name, path in pages.items():
        page.goto(path)
        page.wait_for_load_state("load")
        page.wait_for_timeout(200)  # the scroll boxes are marked after layout (static/js/scroll-boxes.js)
        found = page.evaluate(LAYOUT_JS)
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            if page.locator(".js-plotly").count():
                page.wait_for_function("() => !document.querySelector('.js-plotly:not([data-drawn])')", timeout=30000)
            page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"), full_page=True)
        if found["scroll"] > found["viewport"]:
            problems.append(f"{name} at {width}px: the document is {found['scroll']} px wide")
        problems += [f"{name} at {width}px: {what}" for what in found["clipped"] + found["spilled"]]
    return problems


@pytest.mark.parametrize("width", WIDTHS)
def test_every_public_page_fits_and_no_table_is_clipped(page, fresh_make_run, width):
    page.set_viewport_size({"width": width, "height": 900})
    problems = walk(page, public_pages(fresh_make_run), width)
    page.goto("/accounts/login/")
    page.fill("input[name=username]", fresh_make_run["user"].username)
    page.fill("input[name=password]", "x-pw-98765")
    page.locator("main form button[type=submit], main form input[type=submit]").last.click()
    page.wait_for_load_state("load")
    problems += walk(page, SIGNED_IN_PAGES, width)
    assert problems == [], "\n".join(problems)
    if width >= 1400:  # a laptop sees the whole board, every column, without scrolling it
        for board in ("/", "/?hardware=h200"):
            page.goto(board)
            fits = page.locator("#board").evaluate(
                "t => t.getBoundingClientRect().width <= t.parentElement.clientWidth"
            )
            assert fits, f"the board at {board} is wider than its box at {width}px"
    assert page.js_errors == []
