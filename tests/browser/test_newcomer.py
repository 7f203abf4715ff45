"""The first ten minutes, in Chromium against a live server holding only the demo problem set (a fresh
`make run`): sign up, make a token on the account page, run the README's curl and CLI commands verbatim (only the
server address differs), upload with the web form's defaults, then read the result pages.

No worker runs here: the evaluation message is answered in-process with a harness-shaped record (sample 0 correct,
sample 1 failing D4), so the CLI's `--wait` finishes and its verdicts can be checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from catalogue.models import Submission
from evaluator.harness.record import Record
from evaluator.models import Evaluation
from evaluator.services.evaluations import evaluation_claim, evaluation_finish
from tests.pipeline.helpers import DEMO_DIR, committed, demo_kernel, kernel_name, make_zip, record

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPO_ROOT = Path(__file__).resolve().parents[2]
README = (REPO_ROOT / "README.md").read_text()
README_URL = "http://127.0.0.1:8000"


def readme_command(starts: str) -> str:
    """The README's command line that starts with `starts` (in a code block or inline code)."""
    for line in README.splitlines():
        for candidate in [line.strip(), *re.findall(r"`([^`]+)`", line)]:
            if candidate.startswith(starts):
                return candidate.split("  #")[0].strip()
    raise AssertionError(f"README has no command starting {starts!r}")


@pytest.fixture
def evaluated_in_process(monkeypatch):
    """Answer each evaluation message at once: sample 0 correct at 1.2x, sample 1 failing D4 at 0.34x."""
    from evaluator.tasks.audit import audit_kernels_static
    from evaluator.tasks.evaluation import evaluate_kernel

    def finish(*, args, **_kw):
        evaluation = evaluation_claim(evaluation_id=args[0], worker="in-process")
        hack = evaluation.kernel.sample == 1
        rec = record(speedup=0.34 if hack else 1.2)
        if hack:
            rec["correct"] = False
            rec["distributions"][3]["passed"] = False  # D4
        evaluation_finish(evaluation=evaluation, record=Record.from_dict(committed(evaluation.pk, rec)))

    monkeypatch.setattr(evaluate_kernel, "apply_async", finish)
    monkeypatch.setattr(audit_kernels_static, "apply_async", lambda *a, **kw: None)


@pytest.fixture
def demo_install(db):
    from leaderboard.services.problems import problems_import_path

    problems_import_path(path=DEMO_DIR / "problems", problem_set="demo", demo=True)


def shell(command: str, *, cwd: Path, token: str, url: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",  # `python` is the venv's
        "PYTHONPATH": str(REPO_ROOT),  # `python -m client` from any folder
        "TOKEN": token,
        "HOME": str(cwd),
    }
    return subprocess.run(
        ["bash", "-c", command.replace(README_URL, url)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_newcomer_path(page, live_server, demo_install, evaluated_in_process, tmp_path, screenshot):
    # Sign up from the nav, land on the account page, make a token.
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()
    page.fill("input[name=username]", "newcomer")
    page.fill("input[name=password1]", "first-ten-minutes")
    page.fill("input[name=password2]", "first-ten-minutes")
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_url(re.compile(r"/account/$"))
    page.get_by_role("button", name="Create a token").click()
    token = page.locator("#api-token").inner_text().strip()
    assert len(token) >= 20

    # The README's curl upload, verbatim but for the address: accepted, and its kernels queued and evaluated.
    (tmp_path / "run.zip").write_bytes(
        make_zip({kernel_name(1, 1, s): demo_kernel(1, 1, s) for s in (0, 1)} | {kernel_name(1, 3): demo_kernel(1, 3)})
    )
    curl = readme_command('curl -H "Authorization: Token $TOKEN" -F')
    done = shell(curl + " --fail-with-body", cwd=tmp_path, token=token, url=live_server.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"kernel_count":3' in done.stdout.replace(" ", "")
    first = Submission.objects.get()
    assert first.problem_set == "demo" and first.llm.name == "my-model" and first.uploader.username == "newcomer"

    # The README's CLI command, verbatim: it waits and prints each kernel's verdict, never `ok` for a wrong one.
    (tmp_path / "run.zip").write_bytes(
        make_zip({kernel_name(1, 1, s): demo_kernel(1, 1, s) for s in (0, 1)} | {kernel_name(1, 2): demo_kernel(1, 2)})
    )
    cli = readme_command(".venv/bin/kbv submit")
    (tmp_path / ".venv").symlink_to(REPO_ROOT / ".venv")  # the command as written, from a checkout's root
    done = shell(cli, cwd=tmp_path, token=token, url=live_server.url)
    assert done.returncode == 3, done.stdout + done.stderr  # 3: finished, and not every kernel passed
    assert "L1/1 sample 0: correct 1.20x" in done.stdout
    assert "L1/1 sample 1: incorrect: D4 failed" in done.stdout
    assert " ok" not in done.stdout

    # The web form with its defaults (problem set, hardware): only a name and the file.
    page.goto("/submit/")
    assert page.locator("select[name=problem_set]").input_value() == "demo"
    page.fill("input[name=new_llm]", "web-model")
    page.set_input_files(
        "input[name=bundle]",
        {"name": "run.zip", "mimeType": "application/zip", "buffer": (tmp_path / "run.zip").read_bytes()},
    )
    page.get_by_role("button", name="Upload and evaluate").click()
    page.wait_for_url(re.compile(r"/submissions/\d+/$"))
    assert "Bundle accepted" in page.content()
    assert Submission.objects.count() == 3
    assert not Evaluation.objects.exclude(status=Evaluation.Status.DONE).exists()
    screenshot(page, "newcomer-submission")

    # Result pages: the LLM index, the compare view linked from the LLM page, the problem index.
    page.goto("/llms/")
    page.get_by_role("link", name="web-model").click()
    page.locator("#compare-link").click()
    page.select_option("#compare-b", label="my-model")
    page.get_by_role("button", name="Compare").click()
    table = page.locator("#compare-table").inner_text()
    assert "L1/1 ReLU" in table and "Verified" in table and "not attempted" in table  # best sample of each
    page.goto("/problems/?q=relu")
    assert "L1/1" in page.locator("#problem-index").inner_text()
    page.goto("/audit/")  # a staff page: a newcomer is told, in the site's own page
    assert "Not allowed" in page.locator("h1").inner_text()
    assert page.js_errors == []
