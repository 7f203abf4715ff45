"""The baseline sweep (a clean harness process) and its import into Baseline rows."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.models import Problem
from evaluator.models import Baseline
from tests.conftest import REPO_ROOT

DEMO = REPO_ROOT / "leaderboard" / "demo" / "problems"


def demo_jsonl(path: Path) -> Path:
    import hashlib

    with path.open("w") as out:
        for file in sorted(DEMO.rglob("*.py")):
            pid, name = file.stem.split("_", 1)
            src = file.read_text()
            row = {"level": int(file.parent.name[5:]), "problem_id": int(pid), "name": name, "source": src,
                   "sha256": hashlib.sha256(src.encode()).hexdigest()}  # fmt: skip
            out.write(json.dumps(row) + "\n")
        bad = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        raise ValueError('no')\n"
        bad += "def get_inputs():\n    return [torch.rand(2)]\ndef get_init_inputs():\n    return []\n"
        raising = {"level": 1, "problem_id": 99, "name": "Raises", "source": bad, "sha256": "f" * 64}
        out.write(json.dumps(raising) + "\n")
    return path


def run_sweep(tmp_path: Path, *extra: str, name: str = "sweep.jsonl") -> Path:
    out = tmp_path / name
    cmd = [
        sys.executable,
        "-m",
        "evaluator.harness.workers.baselines",
        str(demo_jsonl(tmp_path / "p.jsonl")),
        "--device",
        "cpu",
        "--out",
        str(out),
        "--levels",
        "1",
        "2",
        "--min-calls",
        "20",
        "--budget",
        "0.2",
    ]
    subprocess.run([*cmd, *extra], cwd=REPO_ROOT, check=True, capture_output=True, timeout=300)
    return out


@pytest.mark.slow  # runs the baseline harness on every demo problem
@pytest.mark.django_db
def test_sweep_measures_every_problem_and_import_stores_both_precisions(tmp_path):
    sweep = run_sweep(tmp_path)
    rows = [json.loads(line) for line in sweep.read_text().splitlines()]
    summary = rows[-1]
    assert summary["summary"] and summary["measured"] == 4 and summary["failed"] == 1
    raising = next(r for r in rows if r.get("problem_id") == 99)
    assert "no" in raising["precisions"]["tf32"]["error"]  # a failing variant is reported, not fatal
    for row in rows[:4]:
        for precision in ("tf32", "fp32"):
            stats = row["precisions"][precision]
            assert stats["median_ms"] > 0 and stats["calls"] >= 20 and stats["flags"]["tf32"] == (precision == "tf32")

    call_command("import_problems", str(DEMO), problem_set="demo", stdout=StringIO())
    err = StringIO()
    call_command("import_baselines", str(sweep), hardware="cpu-test", problem_set="demo", stdout=StringIO(),
                 stderr=err)  # fmt: skip
    assert Baseline.objects.filter(hardware="cpu-test").count() == 8  # 4 problems x (tf32, fp32)
    assert "L1/99" in err.getvalue()  # not in the problem set: reported, not stored
    relu = Problem.objects.get(problem_set="demo", level=1, problem_id=1)
    assert set(relu.baselines.values_list("precision", flat=True)) == {"tf32", "fp32"}
    # Re-importing updates in place rather than duplicating.
    call_command("import_baselines", str(sweep), hardware="cpu-test", problem_set="demo", stdout=StringIO(),
                 stderr=StringIO())  # fmt: skip
    assert Baseline.objects.filter(hardware="cpu-test").count() == 8


@pytest.mark.django_db
def test_committed_h200_sweeps_cover_all_250_problems_and_torch_compile_on_248(problems_jsonl):
    """The H200 figures in benchmarks/results attach to the exact sources they were measured on: TF32 and FP32 for
    all 250 core problems (the sweep with the launch lead, 2026-12-02; the earlier sweep and its Level-3 tail too),
    torch.compile for 248 of them (a sample, then the rest), as `make run` loads them. The compile sample's own
    eager columns are not imported over the main sweep's."""
    call_command("import_problems", str(problems_jsonl), stdout=StringIO())
    results = REPO_ROOT / "benchmarks" / "results"
    for names in (["baselines-h200.jsonl", "baselines-h200-l3-36-50.jsonl"], ["baselines-h200-lead.jsonl"]):
        for name in names:
            call_command("import_baselines", str(results / name), hardware="h200", stdout=StringIO(),
                         stderr=StringIO())  # fmt: skip
        eager = Baseline.objects.filter(hardware="h200")
        assert eager.values("problem").distinct().count() == 250
        assert eager.filter(precision="tf32").count() == eager.filter(precision="fp32").count() == 250
        matmul = {b.precision: b.median_ms for b in eager.filter(problem__level=1, problem__problem_id=1)}
        assert matmul["fp32"] / matmul["tf32"] > 5  # the TF32 effect on the 4096 matmul
        assert eager.first().torch_version.startswith("2.11")
    # the later sweep replaced the earlier one's sample (one sweep per setting), and says it ran behind the lead
    lead = Baseline.objects.get(hardware="h200", precision="tf32", problem__level=2, problem__problem_id=12)
    assert "264 blocks of 1024" in lead.stats["launch_lead"] and lead.median_ms < 0.4
    before = dict(eager.values_list("pk", "median_ms"))

    for name in ("baselines-h200-compile-sample.jsonl", "baselines-h200-compile-rest.jsonl"):
        call_command("import_baselines", str(results / name), hardware="h200", precisions=["compile"],
                     stdout=StringIO(), stderr=StringIO())  # fmt: skip
    compiled = Baseline.objects.filter(hardware="h200", precision="compile")
    # torch.compile for every problem but two whose sweep ran out of memory next to seven other sweep processes
    missing = eager.filter(precision="tf32").exclude(problem__in=compiled.values("problem"))
    assert sorted(missing.values_list("problem__level", "problem__problem_id")) == [(1, 35), (1, 39)]
    assert compiled.count() == 248
    assert dict(Baseline.objects.filter(pk__in=before).values_list("pk", "median_ms")) == before


@pytest.mark.slow  # runs the baseline harness on every demo problem
def test_sharded_sweep_merges_every_problem_once_with_one_summary(tmp_path):
    """`--shards 2`: two sweep processes share the device (timing through the GPU lock); one sorted file comes out."""
    out = run_sweep(tmp_path, "--shards", "2", name="sharded.jsonl")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    summary, problems = rows[-1], rows[:-1]
    assert summary["summary"] and summary["shards"] == 2 and summary["shard_exit_codes"] == [0, 0]
    assert summary["measured"] == 4 and summary["failed"] == 1 and summary["total_seconds"] > 0
    keys = [(r["level"], r["problem_id"]) for r in problems]
    assert keys == sorted(keys) and len(set(keys)) == 5
    assert all(r["precisions"]["fp32"]["median_ms"] > 0 for r in problems if r["problem_id"] != 99)
