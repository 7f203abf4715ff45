"""The Python API the pipeline uses (runner.run_evaluation), the CLI and the management command."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluator.harness.protocol import validate_result
from evaluator.runner import InfraError, run_evaluation

from .conftest import KERNELS, PROBLEMS, source

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # starts the real harness
def test_broken_problem_is_an_infrastructure_error(tmp_path):
    with pytest.raises(InfraError, match="Model"):
        run_evaluation(
            problem_source="x = 1\n",
            kernel_source=source("kernel", "relu_correct"),
            timeout=60,
            work_root=tmp_path,
            options={"quick": True},
        )
    assert list(tmp_path.iterdir()) == []  # the work directory is cleaned up


def test_unknown_option_is_refused_before_spawning(tmp_path):
    with pytest.raises(ValueError):
        run_evaluation(problem_source="", kernel_source="", work_root=tmp_path, options={"quik": True})


@pytest.mark.slow  # starts the real harness
def test_cli_human_summary(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.harness",
            str(PROBLEMS / "scale_sum.py"),
            str(KERNELS / "scale_sum_correct.py"),
            "--quick",
            "--work-root",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "status: ok" in done.stdout and "correct (verified): True" in done.stdout
    assert "speedup vs TF32 baseline" in done.stdout


@pytest.mark.slow  # starts the real harness
def test_management_command_prints_one_json_record(settings, tmp_path):
    settings.EVALUATOR_WORK_DIR = tmp_path / "work"
    settings.EVALUATOR_COMPILE_CACHE_DIR = tmp_path / "cache"
    out = StringIO()
    call_command(
        "evaluate_kernel",
        str(PROBLEMS / "relu.py"),
        str(KERNELS / "relu_shape_hack.py"),
        "--quick",
        "--json",
        stdout=out,
    )
    record = json.loads(out.getvalue().strip().splitlines()[-1])
    validate_result(record)
    assert record["correct"] is False and record["standard_correct"] is True
    assert record["environment"]["compile_cache"] in {"hit", "miss"}


@pytest.mark.slow  # builds a C++ extension with load_inline (tens of seconds on CPU)
def test_load_inline_kernel_builds_once_then_hits_the_cache(tmp_path):
    kernel = source("kernel", "relu_cpp_inline")
    runs = [
        run_evaluation(
            problem_source=source("problem", "relu"),
            kernel_source=kernel,
            timeout=600,
            work_root=tmp_path / "work",
            compile_cache_dir=tmp_path / "cache",
            options={"quick": True},
        )
        for _ in range(2)
    ]
    assert [r["status"] for r in runs] == ["ok", "ok"], runs[0]["error"]
    assert runs[0]["correct"] is True
    assert [r["environment"]["compile_cache"] for r in runs] == ["miss", "hit"]
    assert runs[1]["phases"]["compile_import"] < runs[0]["phases"]["compile_import"]


@pytest.mark.slow  # builds a C++ extension with load_inline (tens of seconds on CPU)
def test_kernel_that_builds_on_its_first_call_works_with_the_compile_cache(tmp_path):
    record = run_evaluation(
        problem_source=source("problem", "relu"),
        kernel_source=source("kernel", "relu_cpp_lazy"),
        timeout=600,
        work_root=tmp_path / "work",
        compile_cache_dir=tmp_path / "cache",
        options={"quick": True},
    )
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
