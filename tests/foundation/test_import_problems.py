"""import_problems: JSONL and checkout layouts, idempotence, new versions, bad files."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.models import Problem
from leaderboard.services.problems import problems_import_path

pytestmark = pytest.mark.django_db

GOOD = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(4, 4)]

def get_init_inputs():
    return []
"""


def make_checkout(root: Path) -> Path:
    level1 = root / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    (level1 / "1_ReLU.py").write_text(GOOD)
    (level1 / "2_Broken.py").write_text("class Model(:\n")
    (level1 / "3_NoModel.py").write_text(GOOD.replace("class Model", "class Other"))
    (level1 / "4_NoInputs.py").write_text(GOOD.replace("def get_inputs", "def make_inputs"))
    (level1 / "notes.py").write_text(GOOD)
    level4 = root / "KernelBench" / "level4"
    level4.mkdir()
    (level4 / "1_HF.py").write_text(GOOD)
    return root


def test_jsonl_imports_270_problems_250_core_and_is_idempotent(problems_jsonl):
    out = StringIO()
    call_command("import_problems", str(problems_jsonl), stdout=out)
    assert "270 new" in out.getvalue()
    assert Problem.objects.count() == 270
    assert Problem.objects.filter(core=True).count() == 250
    assert not Problem.objects.filter(level=4, core=True).exists()

    out = StringIO()
    call_command("import_problems", str(problems_jsonl), stdout=out)
    assert "0 new, 0 new versions, 270 unchanged" in out.getvalue()
    assert Problem.objects.count() == 270


def test_jsonl_marks_the_three_constant_output_problems_inactive_with_a_reason(problems_jsonl):
    call_command("import_problems", str(problems_jsonl), stdout=StringIO())
    inactive = Problem.objects.filter(active=False)
    assert sorted(inactive.values_list("level", "problem_id")) == [(2, 23), (2, 80), (2, 83)]
    assert all(p.inactive_reason for p in inactive)
    assert Problem.objects.filter(level=2, core=True, active=True).count() == 97


def test_checkout_layout_imports_good_files_and_reports_bad_ones_by_name(tmp_path):
    report = problems_import_path(path=make_checkout(tmp_path), problem_set="t")
    assert sorted(report.created) == ["L1/1 1_ReLU.py", "L4/1 1_HF.py"]
    skipped = dict(report.skipped)
    assert "syntax error" in skipped["L1/2 2_Broken.py"]
    assert "class Model" in skipped["L1/3 3_NoModel.py"]
    assert "get_inputs()" in skipped["L1/4 4_NoInputs.py"]
    assert "<id>_<Name>.py" in skipped["level1/notes.py"]
    assert Problem.objects.get(level=4).core is False


def test_command_reports_skipped_files_on_stderr(tmp_path):
    err = StringIO()
    call_command("import_problems", str(make_checkout(tmp_path)), problem_set="t", stdout=StringIO(), stderr=err)
    assert "skipped L1/2 2_Broken.py" in err.getvalue()


def test_changed_source_becomes_a_new_version_and_old_rows_keep_their_source(tmp_path):
    checkout = make_checkout(tmp_path)
    problems_import_path(path=checkout, problem_set="t")
    old = Problem.objects.get(problem_set="t", level=1, problem_id=1)
    (checkout / "KernelBench" / "level1" / "1_ReLU.py").write_text(GOOD.replace("(4, 4)", "(8, 8)"))
    report = problems_import_path(path=checkout, problem_set="t")
    assert report.new_versions == ["L1/1 1_ReLU.py"]
    versions = Problem.objects.filter(problem_set="t", level=1, problem_id=1).order_by("created_at")
    assert versions.count() == 2
    old.refresh_from_db()
    assert old.is_latest is False and "(4, 4)" in old.source
    assert versions.last().is_latest is True and "(8, 8)" in versions.last().source


def test_jsonl_with_wrong_sha_or_bad_line_is_reported_and_rest_imports(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [
        {"level": 1, "problem_id": 1, "name": "ReLU", "source": GOOD},
        {"level": 1, "problem_id": 2, "name": "X", "source": GOOD, "sha256": "0" * 64},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    report = problems_import_path(path=path, problem_set="t")
    assert len(report.created) == 1
    reasons = " ".join(r for _, r in report.skipped)
    assert "sha256 does not match" in reasons and "not a problem record" in reasons


def test_missing_path_is_a_command_error(tmp_path):
    with pytest.raises(CommandError):
        call_command("import_problems", str(tmp_path / "nope"))
    with pytest.raises(CommandError):
        call_command("import_problems", str(tmp_path))  # a folder without level*/ is not a checkout
