"""python manage.py import_problems PATH [--problem-set LABEL]

PATH is a KernelBench checkout (its KernelBench/level*/<id>_<Name>.py files) or a JSONL file in the format of
shared/datasets/kernelbench/problems.jsonl. Re-importing is a no-op; changed sources become new problem versions.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from leaderboard.services.problems import problems_import_path


class Command(BaseCommand):
    help = "Import KernelBench problems from a checkout or a JSONL file (idempotent by sha256)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument(
            "--problem-set",
            default=settings.PROBLEM_SET_DEFAULT or "kernelbench-main",
            help="problem-set version label",
        )

    def handle(self, *args, path: Path, problem_set: str, **options) -> None:
        try:
            report = problems_import_path(path=path, problem_set=problem_set)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        for name, reason in report.skipped:
            self.stderr.write(f"skipped {name}: {reason}")
        for name in report.new_versions:
            self.stdout.write(f"new version of {name}")
        self.stdout.write(self.style.SUCCESS(f"{problem_set}: {report.summary()}"))
