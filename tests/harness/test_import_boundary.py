"""The harness boundary: the runner and protocol pull in no Django, and harness modules import only stdlib + torch."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "evaluator" / "harness"
FORBIDDEN = {"django", "rest_framework", "celery", "leaderboard", "inspector", "kombu"}


def test_runner_and_protocol_import_no_django_and_no_torch():
    code = (
        "import sys, evaluator.harness.protocol, evaluator.runner;"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r} or m.split('.')[0] == 'torch');"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# What each folder of the harness may import, besides the standard library. The top-level modules (the record,
# the spec and options, the commands, the errors, the seeds, the timing statistics) are shared by every side.
TOP = {p.stem for p in HARNESS.glob("*.py")} - {"__init__", "__main__"}
FOLDERS = {
    "sandbox": {"sandbox"},  # starts processes and touches kernel-writable files: no torch, no phases
    "orchestrator": {"sandbox", "orchestrator"},  # drives the evaluation: no torch, no worker code
    "workers": {"sandbox", "workers", "torch"},  # the two torch processes: never the orchestrator
}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


# Outside stdlib and torch, one module in one file, imported only where installed: tamper_watch switches off the
# monitor thread of tqdm's progress bars (torch.compile's inductor draws them on CUDA) before any kernel code runs.
OPTIONAL = {("workers/tamper_watch.py", "tqdm.std")}


def _where(module: str, rel: str = "") -> str | None:
    """The harness folder (or "top", "torch") an imported name belongs to; None for the standard library."""
    parts = module.split(".")
    if parts[0] == "torch":
        return "torch"
    if (rel, module) in OPTIONAL:
        return None
    if parts[:2] != ["evaluator", "harness"]:
        assert parts[0] in sys.stdlib_module_names, f"not stdlib, torch or the harness: {module}"
        return None
    if len(parts) == 2 or parts[2] in TOP:
        return "top"
    assert parts[2] in FOLDERS, f"unknown harness folder: {module}"
    return parts[2]


def _violations(root: Path = HARNESS) -> list[str]:
    bad = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        folder = rel.parts[0] if len(rel.parts) > 1 else "top"
        if path.name == "__main__.py" and folder == "top":
            allowed = {"top", "orchestrator", "sandbox"}  # the command line starts the orchestrator
        else:
            allowed = {"top"} | FOLDERS.get(folder, set())
        for line, module in _imports(path):
            where = _where(module, str(rel))
            if where is not None and where not in allowed:
                bad.append(f"{rel}:{line} imports {module} ({where} is outside what {folder}/ may import)")
    return bad


def test_each_harness_folder_imports_only_what_its_boundary_allows():
    assert (HARNESS / "orchestrator").is_dir() and (HARNESS / "workers").is_dir() and (HARNESS / "sandbox").is_dir()
    assert _violations() == []


def test_the_folder_rule_sees_a_torch_import_in_the_orchestrator(tmp_path):
    # A planted violation is reported, so the test above cannot pass by reading nothing.
    copy = tmp_path / "harness"
    shutil.copytree(HARNESS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "orchestrator" / "_planted_violation.py").write_text(
        "import torch\nfrom evaluator.harness.workers import inputs\n"
    )
    bad = _violations(copy)
    assert any("_planted_violation.py:1 imports torch" in b for b in bad)
    assert any("imports evaluator.harness.workers.inputs" in b for b in bad)


def test_the_orchestrator_process_never_loads_torch():
    """Transitively: the driver and everything it imports stay torch-free (its clock and verdict are out of the
    candidate's reach only if it never runs torch, let alone candidate code)."""
    code = (
        "import sys, evaluator.harness.__main__, evaluator.harness.orchestrator.evaluation;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'torch'); print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
