"""No module of the project is longer than 400 lines: app code, config, the harness, the client, scripts and
benchmarks alike. Generated migrations and the KernelBench problem files (data) are not counted; tests are not."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 400
FOLDERS = ["catalogue", "evaluator", "leaderboard", "inspector", "config", "client", "scripts", "benchmarks"]
NOT_COUNTED = ("/migrations/", "leaderboard/demo/problems/", "benchmarks/problems/")


def _modules() -> list[Path]:
    paths = [ROOT / "manage.py"]
    for folder in FOLDERS:
        paths += sorted((ROOT / folder).rglob("*.py"))
    return [p for p in paths if not any(skip in p.relative_to(ROOT).as_posix() for skip in NOT_COUNTED)]


def test_the_check_reads_the_harness_and_the_scripts():
    names = {p.relative_to(ROOT).as_posix() for p in _modules()}
    assert {"evaluator/harness/record.py", "config/settings.py", "manage.py"} <= names
    assert any(name.startswith("scripts/") for name in names)
    assert not any("/migrations/" in name for name in names)


def test_no_module_exceeds_the_limit():
    long = {p.relative_to(ROOT).as_posix(): n for p in _modules() if (n := len(p.read_text().splitlines())) > LIMIT}
    assert long == {}, f"modules over {LIMIT} lines: {long}"
