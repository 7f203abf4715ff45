"""Step 1 of scripts/gpu_e2e.py: a virtualenv that sees the machine's torch, filled from `wheels/` with no index."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .common import REPO, run


def install(host: str, venv: Path, wheels: Path) -> str:
    """A venv that sees the machine's torch, filled from the wheels folder only. Returns its python."""
    if not any(wheels.glob("*.whl")):
        raise SystemExit(f"no wheels in {wheels}: run `make wheels` on a connected machine and carry the folder")
    run([host, "-m", "venv", "--system-site-packages", "--without-pip", "--clear", str(venv)])
    py = str(venv / "bin" / "python")
    # python3 may itself be a venv (then --system-site-packages reaches its base, not torch): name torch's folder
    # and the host's own site folders in a .pth, after the new venv's own site-packages.
    host_sites = run(
        [
            host,
            "-c",
            "import json, os, site, torch; print(json.dumps([os.path.dirname(os.path.dirname("
            "torch.__file__)), *site.getsitepackages()]))",
        ]
    ).stdout
    purelib = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(purelib, "kbv_host_site.pth").write_text("\n".join(dict.fromkeys(json.loads(host_sites))) + "\n")
    requirements = venv / "requirements-no-torch.txt"
    lines = (REPO / "requirements.txt").read_text().splitlines()
    requirements.write_text("\n".join(x for x in lines if not x.strip().lower().startswith("torch")) + "\n")
    pip = [py, "-m", "pip"]
    if subprocess.run([*pip, "--version"], capture_output=True).returncode:
        pip = [host, "-m", "pip", "--python", py]  # no pip reachable from the venv: the host's, aimed at it
    run(
        [
            *pip,
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheels),
            "--disable-pip-version-check",
            "-r",
            str(requirements),
        ]
    )
    run([py, "-c", "import django, rest_framework, celery, torch"])
    return py
