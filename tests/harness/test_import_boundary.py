"""The harness boundary: the runner and protocol pull in no Django, and harness modules import only stdlib + torch."""

from __future__ import annotations

import ast
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


def test_harness_modules_import_only_stdlib_torch_and_the_harness():
    allowed = set(sys.stdlib_module_names) | {"torch", "evaluator"}
    for path in HARNESS.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in allowed, f"{path.name} imports {name}"
                if top == "evaluator":
                    assert name.startswith("evaluator.harness"), f"{path.name} imports {name}"


def test_protocol_and_orchestrator_do_not_import_torch():
    orchestrator_side = (
        *("protocol", "orchestrator", "sandbox", "compile_cache", "hardening", "__main__"),
        *("commands", "errors", "clients", "launch", "context", "setup_phase", "correctness_phase", "verdict"),
        *("timing_phase", "timing_record", "timing", "limits", "command_loop"),
    )
    for name in orchestrator_side:
        tree = ast.parse((HARNESS / f"{name}.py").read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "torch" not in imported, name


def test_the_orchestrator_process_never_loads_torch():
    """Transitively: the driver and everything it imports stay torch-free (its clock and verdict are out of the
    candidate's reach only if it never runs torch, let alone candidate code)."""
    code = (
        "import sys, evaluator.harness.__main__, evaluator.harness.orchestrator;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'torch'); print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
