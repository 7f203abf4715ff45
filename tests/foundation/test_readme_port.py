"""The README says how to serve on another port, and that way works: make passes PORT (and HOST) to the script that
starts the web server."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_the_readme_says_how_to_change_the_port_and_make_passes_it_on(monkeypatch):
    said = re.search(r"`make run PORT=(\d+)`", README)
    assert said, "the README does not say how to change the port"
    port = said.group(1)
    if shutil.which("make"):  # the recipe as make would run it (-n: printed, not run)
        recipe = subprocess.run(["make", "-n", "run", f"PORT={port}"], cwd=REPO, capture_output=True, text=True)
        line = next(x for x in recipe.stdout.splitlines() if "scripts/run_all.py" in x)
        assert f"PORT={port}" in line
    else:
        pytest.skip("make is not installed")
    spec = importlib.util.spec_from_file_location("run_all", REPO / "scripts" / "run_all.py")
    run_all = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "run_all", run_all)  # its dataclasses look their module up there
    spec.loader.exec_module(run_all)
    monkeypatch.setenv("PORT", port)
    (web,) = [child for child in run_all.children() if child.name == "web"]
    assert f"127.0.0.1:{port}" in web.argv
