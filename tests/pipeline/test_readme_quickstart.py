"""The README's quick start on a fresh state folder, end to end: the steps of `make run` (the Makefile's `demo` and
`run` recipes: migrate, the cache table, the CPU demo, the H200 results fixture, then `scripts/run_all.py`: the site
and one real worker), then the README's "Your first upload" commands verbatim (only the address and the pasted token
differ) against it. The worker evaluates the demo on the CPU, so the commands' `--wait` ends with real verdicts.

`make run` itself is not called: on a machine whose requirements changed since the virtualenv was made it would
rebuild the shared virtualenv first.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
README = (REPO_ROOT / "README.md").read_text()
README_URL = "http://127.0.0.1:8000"
PYTHON = str(REPO_ROOT / ".venv" / "bin" / "python")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_block(heading: str) -> list[str]:
    section = README.split(heading, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:  # the test's own server
        return json.loads(response.read())


@pytest.fixture
def make_run(tmp_path):
    """The site and a worker on a fresh VAR_DIR, as `make run` starts them; stopped (whole process group) after."""
    if not Path(PYTHON).exists():
        pytest.skip("no .venv (make install)")
    port = free_port()
    env = {**os.environ, "VAR_DIR": str(tmp_path / "var"), "DJANGO_DEBUG": "True", "PORT": str(port),
           "HOST": "127.0.0.1", "DJANGO_SETTINGS_MODULE": "config.settings"}  # fmt: skip
    env.pop("SECRET_KEY", None)
    for step in (["migrate", "--noinput"], ["createcachetable"], ["load_demo"],
                 ["load_gpu_results", "leaderboard/fixtures/h200_e2e.json"]):  # fmt: skip
        subprocess.run([PYTHON, "manage.py", *step], cwd=REPO_ROOT, env=env, check=True, capture_output=True)
    log = (tmp_path / "run_all.log").open("w")
    proc = subprocess.Popen(
        [PYTHON, "scripts/run_all.py"], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError((tmp_path / "run_all.log").read_text()) from None
                time.sleep(1)
        yield {"url": url, "env": env}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def test_the_readme_first_upload_on_a_fresh_make_run(make_run, tmp_path):
    url, env = make_run["url"], make_run["env"]
    make_token = (
        "from django.contrib.auth import get_user_model; from leaderboard.services.tokens import api_token_create; "
        "print(api_token_create(user=get_user_model().objects.create_user(username='newcomer', password='x-pw-987')))"
    )
    token = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", make_token], cwd=REPO_ROOT, env=env, check=True, capture_output=True,
        text=True,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    work = tmp_path / "checkout"
    work.mkdir()
    for name in (".venv", "leaderboard"):  # the commands as written, from a checkout's root
        (work / name).symlink_to(REPO_ROOT / name)
    commands = [re.sub(r"^export TOKEN=\S+$", f"export TOKEN={token}", c.replace(README_URL, url))
                for c in readme_block("### Your first upload")]  # fmt: skip
    script = "\n".join(f'{c}\nrc=$?; echo; echo "== exit $rc"' for c in commands)
    shell_env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(work)}
    done = subprocess.run(["bash", "-c", script], cwd=work, env=shell_env, capture_output=True, text=True, timeout=900)
    steps = done.stdout.split("== exit ")  # steps[i]: command i's exit code, then command i+1's output
    assert [s.split("\n", 1)[0] for s in steps[1:]] == ["0", "0", "0", "3"], done.stdout + done.stderr
    created = json.loads(steps[2].split("\n", 1)[1].strip())
    assert (created["problem_set"], created["hardware"], created["kernel_count"]) == ("demo", "cpu", 8)
    assert "duplicate: submission" in steps[3]
    verdicts = re.findall(r"^  L\d/\d sample \d: (.+)$", steps[3], re.M)
    assert len(verdicts) == 8 and any(v.startswith("correct") for v in verdicts), steps[3]
    assert any(v.startswith("incorrect") for v in verdicts)  # the demo's hacks are caught
    # The board and the API still open on the CPU demo, with the newcomer's LLM on it.
    board = get_json(f"{url}/api/leaderboard/")
    assert (board["hardware"], board["problem_set"]) == ("cpu", "demo")
    assert "my-model" in {row["name"] for row in board["rows"]}
