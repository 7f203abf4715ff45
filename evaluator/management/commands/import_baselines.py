"""python manage.py import_baselines SWEEP.jsonl --hardware h200 [--problem-set LABEL] [--precisions compile]

Stores a baseline sweep written by `python3 -m evaluator.harness.workers.baselines` on a GPU machine.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from evaluator.services.baselines import PRECISIONS, baselines_import


class Command(BaseCommand):
    help = "Import a baseline sweep (TF32/FP32/compile timings and peak memory per problem)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--hardware", required=True)
        parser.add_argument("--problem-set", default=settings.PROBLEM_SET_DEFAULT or "kernelbench-main")
        parser.add_argument(
            "--precisions", nargs="+", choices=sorted(PRECISIONS), default=sorted(PRECISIONS), help="only these columns"
        )

    def handle(self, *args, path: Path, hardware: str, problem_set: str, precisions: list[str], **options) -> None:
        report = baselines_import(path=path, hardware=hardware, problem_set=problem_set, precisions=set(precisions))
        for line in report.skipped:
            self.stderr.write(f"skipped {line}")
        self.stdout.write(self.style.SUCCESS(f"{report.stored} baselines stored for {report.problems} problems"))
