"""What a newcomer sees after `make run` on a CPU machine: the demo set evaluated on the CPU beside the H200 results
fixture (`load_gpu_results`), in Chromium at a laptop's 1400x900 and a phone's 390x844.

The README's "Your first upload" commands run verbatim (only the server address and the pasted token differ)
against a live server; the pages fit both widths with the ranking key (Fast@1, Correct speedup) above the fold, no
text is squeezed narrower than a word, uploads default to the set with problems for the deployment's hardware, and
only a suspicion of medium severity or above earns the "flagged" badge. No worker runs: each evaluation message is
answered in-process (tests/browser/test_newcomer.py's fixture).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.models import LLM, Kernel, Submission
from evaluator.models import AuditFlag
from tests.browser.test_newcomer import README, README_URL, REPO_ROOT, evaluated_in_process  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

GPU_FIXTURE = REPO_ROOT / "leaderboard" / "fixtures" / "h200_e2e.json"
SIZES = [(1400, 900), (390, 844)]
# A visible element with text narrower than this, whose text wraps to more than one line, reads one word per line.
MIN_TEXT_WIDTH = 30
NARROW_TEXT_JS = """(minWidth) => {
  const hidden = (el) => { for (let a = el; a; a = a.parentElement) { const r = a.getBoundingClientRect();
      if (r.width <= 1 || r.height <= 1 || getComputedStyle(a).visibility === 'hidden') return true; } return false; };
  const out = [];
  for (const el of document.querySelectorAll('main *')) {
    const text = Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
    if (text.length < 3 || el.closest('.js-plotly, svg') || hidden(el)) continue;
    const r = el.getBoundingClientRect();
    const line = parseFloat(getComputedStyle(el).lineHeight) || 1.5 * parseFloat(getComputedStyle(el).fontSize);
    if (r.width < minWidth && r.height > 1.6 * line)
      out.push(`${el.tagName} "${text.slice(0, 40)}" ${Math.round(r.width)}x${Math.round(r.height)}`);
  }
  return out;
}"""


@pytest.fixture
def make_run_state(db, settings, evaluated_in_process):  # noqa: F811
    """A CPU install after `make run`: the demo evaluated on the CPU, then the H200 results fixture loaded."""
    settings.PROBLEM_SET_DEFAULT = ""
    settings.EVALUATOR_DEFAULT_HARDWARE = "cpu"
    settings.EVALUATOR_HARDWARE_LABELS = ["cpu"]
    call_command("load_demo", stdout=open(os.devnull, "w"))
    call_command("load_gpu_results", str(GPU_FIXTURE), stdout=open(os.devnull, "w"))
    demo = Submission.objects.get(llm__name="demo-llm")
    kernels = list(Kernel.objects.filter(submission=demo).order_by("problem__level", "problem__problem_id", "sample"))
    # The information-level rule that fires on plain-PyTorch kernels, and one real suspicion.
    for k in kernels:
        AuditFlag.objects.create(kernel=k, source="rule", source_name="no_custom_kernel", verdict="info",
                                 severity="medium", classes=["D1"], rationale="plain PyTorch")  # fmt: skip
    AuditFlag.objects.create(kernel=kernels[1], source="rule", source_name="shape_guard", verdict="suspicious",
                             severity="high", classes=["B7"], rationale="returns early on one shape")  # fmt: skip
    return {"demo_llm": demo.llm, "gpu_llm": LLM.objects.get(name__startswith="e2e-h200"), "kernels": kernels}


def readme_block(heading: str) -> list[str]:
    """The command lines of the first ```sh block under a README heading (comments dropped)."""
    section = README.split(heading, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_first_upload_runs_verbatim(live_server, make_run_state, tmp_path):
    from django.contrib.auth import get_user_model

    from leaderboard.services.tokens import api_token_create

    token = api_token_create(user=get_user_model().objects.create_user(username="newcomer", password="x-pw-98765"))
    for name in (".venv", "leaderboard"):  # a checkout's root, without writing run.zip into this one
        (tmp_path / name).symlink_to(REPO_ROOT / name)
    outputs = []
    for line in readme_block("### Your first upload"):
        command = line.replace(README_URL, live_server.url)
        command = re.sub(r"^export TOKEN=\S+$", f"export TOKEN={token}", command)
        outputs.append(command)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    script = "\n".join(f'{c}\nrc=$?; echo; echo "== exit $rc"' for c in outputs)
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = done.stdout
    steps = out.split("== exit ")  # steps[i]: command i's exit code, then command i+1's output
    assert [s.split("\n", 1)[0] for s in steps[1:]] == ["0", "0", "0", "3"], out + done.stderr
    created = json.loads(steps[2].split("\n", 1)[1].strip())  # curl's answer
    assert created["problem_set"] == "demo" and created["hardware"] == "cpu" and created["kernel_count"] == 8
    assert created["duplicate"] is False
    assert f"duplicate: submission {created['id']} " in steps[3] and "sample" in steps[3]  # then every verdict
    # What the README says kbv prints holds on this fresh install (the demo and the H200 results come first).
    for said in re.findall(r"duplicate: submission (\w+)", README):
        assert said == "N" or int(said) == created["id"], f"README says submission {said}, kbv said {created['id']}"
    assert Submission.objects.get(llm__name="my-model").problem_set == "demo"


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_pages_fit_with_the_ranking_key_above_the_fold(page, make_run_state, width, height, screenshot):
    page.set_viewport_size({"width": width, "height": height})
    state = make_run_state
    paths = {
        "board": "/",
        "board-h200": "/?hardware=h200",
        "llm-demo": f"/llms/{state['demo_llm'].pk}/",
        "llm-gpu": f"/llms/{state['gpu_llm'].pk}/",
        "problems": "/problems/",
        "compare": f"/compare/?a={state['demo_llm'].pk}&b={state['gpu_llm'].pk}",
        "kernel": f"/kernels/{state['kernels'][1].pk}/",
        "kernel-gpu": f"/kernels/{Kernel.objects.filter(llm=state['gpu_llm']).first().pk}/",
    }
    for name, path in paths.items():
        page.goto(path)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{name} is wider than {width}"
        assert page.evaluate(NARROW_TEXT_JS, MIN_TEXT_WIDTH) == [], name
        screenshot(page, f"first-view-{name}-{width}")
        if name.startswith("board"):
            for col in ("fast_1", "speedup"):  # the first LLM row's ranking figures: on screen, above the fold
                box = page.locator(f"#board tr.llm-row td[data-col={col}]").first.bounding_box()
                assert box and 0 <= box["x"] and box["x"] + box["width"] <= width, (name, col, box)
                assert box["y"] + box["height"] <= height, (name, col, box)
        if name.startswith("llm"):  # an LLM page opens on a view holding its kernels
            assert "No evaluated kernels" not in page.content()
            verdict = page.locator("table.kernels td[data-label=Verdict]").first.bounding_box()
            assert verdict and verdict["x"] + verdict["width"] <= width
    page.goto("/problems/")
    assert page.locator("#problem-index tr.set-group").count() == 2  # demo and kernelbench-main: no doubled rows
    assert page.js_errors == []


def test_uploads_default_to_the_demo_set_and_only_suspicions_are_flagged(page, make_run_state, django_user_model):
    state = make_run_state
    user = django_user_model.objects.create_user(username="newcomer", password="first-ten-minutes")
    page.goto("/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", "first-ten-minutes")
    page.locator("form button[type=submit], form input[type=submit]").last.click()
    page.goto("/submit/")
    assert page.locator("select[name=problem_set]").input_value() == "demo"
    page.goto(f"/llms/{state['demo_llm'].pk}/")
    rows = page.locator("table.kernels tbody tr")
    flagged = [i for i in range(rows.count()) if "flagged" in rows.nth(i).inner_text()]
    assert len(flagged) == 1  # the high-severity suspicion; the info rule on all eight is no badge
    page.goto(f"/kernels/{state['kernels'][1].pk}/")
    flags = page.locator("article.flag h3").all_inner_texts()
    assert "shape_guard" in flags[0] and "no_custom_kernel" in flags[1]  # high severity first
    assert page.locator("article.flag").nth(1).locator(".badge-info").count() == 1
