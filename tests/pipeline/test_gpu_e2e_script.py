"""The product end to end (scripts/gpu_e2e.py), run here on the CPU with the two-kernel bundle so it cannot
rot (the same steps as on the H200: migrate, import problems, token, runserver + Celery workers with the sandbox
required, upload through the REST API, wait with the CLI client, record, fixture), and the fixture it exports loaded
beside the demo by `manage.py load_gpu_results`."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.pipeline.helpers import DEMO_DIR, DEMO_SET, REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "gpu_e2e.py"


def _script_module() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_e2e", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "name, label",
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H100 80GB HBM3", "h100"),  # the card the 2026-12-05 run got: it was filed as h200 then
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("", "gpu"),
    ],
)
def test_a_run_is_filed_under_the_card_it_ran_on(name: str, label: str) -> None:
    assert _script_module().hardware_label(name) == label


def test_gpu_bundle_is_accepted_by_the_parser(tmp_path: Path) -> None:
    """The H200 bundle: benchmarks/kernels plus reference wrappers, >= 20 problems, L1/19 and a Level 3 model."""
    from leaderboard.bundles import parse_bundle

    gpu_e2e = _script_module()
    files = gpu_e2e.bundle_files("cuda", "full")
    problems = {key[:2] for key in files}
    assert len(problems) >= 20
    assert (1, 19) in problems and any(level == 3 for level, _ in problems)
    kernels = {p.name for p in (REPO_ROOT / "benchmarks" / "kernels").glob("*.py")}
    assert set(gpu_e2e.KERNEL_FILES.values()) == kernels  # every kernel of benchmarks/kernels is in the bundle
    path = tmp_path / "bundle.zip"
    gpu_e2e.build_bundle(files, path)
    parsed = parse_bundle(filename=path.name, data=path.read_bytes())
    assert sorted(e.key for e in parsed.entries) == sorted(files)
    assert all(r["status"] == "accepted" for r in parsed.report_dicts())
    assert gpu_e2e.build_bundle(files, tmp_path / "again.zip") == gpu_e2e.build_bundle(files, path)  # same bytes
    assert len(gpu_e2e.bundle_files("cuda", "two")) == 2


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the script on the CPU (about 1.5-2 minutes on two cores)."""
    root = tmp_path_factory.mktemp("gpu-e2e")
    out = root / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    env.pop("VAR_DIR", None)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "--device", "cpu", "--bundle", "two", "--no-install",
         "--work", str(root / "work"), "--fixture-name", "cpu_e2e.json", "--timeout", "300"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=480,
    )  # fmt: skip
    logs = (out / "gpu_e2e_logs.txt").read_text(errors="replace")[-6000:] if (out / "gpu_e2e_logs.txt").exists() else ""
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}\n{logs}"
    return {"out": out, "stdout": done.stdout, "record": json.loads((out / "gpu_e2e.json").read_text())}


@pytest.mark.slow
def test_script_runs_the_product_end_to_end_on_cpu(cpu_run: dict[str, Any]) -> None:
    record, out = cpu_run["record"], cpu_run["out"]
    assert sorted(p.name for p in out.iterdir()) == ["cpu_e2e.json", "gpu_e2e.json", "gpu_e2e.md", "gpu_e2e_logs.txt"]
    summary = record["summary"]
    assert summary["kernels"] == 2 and summary["statuses"] == {"ok": 2}
    assert summary["sandbox_modes"] == ["namespaces"]  # DJANGO_DEBUG=False: the sandbox is required
    assert summary["upload_to_last_verdict_s"] > 0 and summary["median_total_s"] > 0
    verdicts = {r["sample"]: r for r in record["kernels"]}
    assert verdicts[0]["correct"] is True and verdicts[0]["verdict"].startswith("correct")
    assert verdicts[1]["correct"] is False and "D4" in verdicts[1]["failed"]  # the shape-guard hack
    assert all(r["worker"].startswith("cpu-worker@") and r["overhead_s"] is not None for r in record["kernels"])
    llm_rows = [row for row in record["leaderboard"] if row["kind"] == "llm"]
    assert [row["name"] for row in llm_rows] == [record["llm"]] and llm_rows[0]["correct"] == 1
    assert "Leaderboard rows:" in cpu_run["stdout"] and "incorrect (D4 failed)" in cpu_run["stdout"]
    assert "| L1/1 s1 | demo | incorrect (D4 failed) |" in (out / "gpu_e2e.md").read_text()
    models = {row["model"].split(".")[1] for row in json.loads((out / "cpu_e2e.json").read_text())}
    assert {"llm", "problem", "submission", "kernel", "evaluation", "distributionresult"} <= models


@pytest.mark.slow
@pytest.mark.django_db
def test_exported_fixture_loads_beside_the_demo(cpu_run: dict[str, Any], settings: Any) -> None:
    from django.apps import apps

    from leaderboard.selectors.ranking import board_choices, leaderboard_rows
    from leaderboard.services.problems import problems_import_path

    models = {m.__name__: m for m in apps.get_models()}
    Evaluation, Problem, Submission = models["Evaluation"], models["Problem"], models["Submission"]
    problems_import_path(path=DEMO_DIR / "problems", problem_set=DEMO_SET, demo=True)
    before = Problem.objects.count()
    fixture = cpu_run["out"] / "cpu_e2e.json"
    settings.EVALUATOR_HARDWARE_LABELS = ["cpu"]  # not needed to load: the list gates uploads only
    call_command("load_gpu_results", str(fixture))
    assert Problem.objects.count() == before  # matched by sha256, not duplicated
    sub = Submission.objects.get()
    assert sub.llm.name == cpu_run["record"]["llm"] and "torch" in sub.llm.notes and sub.uploader_id is None
    assert sub.created_at.isoformat().startswith(cpu_run["record"]["submission"]["created_at"][:16])
    assert Evaluation.objects.filter(kernel__submission=sub, status="done").count() == 2
    rows = leaderboard_rows(hardware="cpu", problem_set=DEMO_SET)
    assert [r.name for r in rows if r.kind == "llm"] == [sub.llm.name]
    assert board_choices().default_problem_set == DEMO_SET
    call_command("load_gpu_results", str(fixture))  # idempotent
    assert Submission.objects.count() == 1 and Evaluation.objects.count() == 2
