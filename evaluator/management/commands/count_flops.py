"""Count and store the FLOPs and bytes of one forward of each problem (evaluator.services.work)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from catalogue.models import Problem
from evaluator.services.work import problems_count_work


class Command(BaseCommand):
    help = "Count FLOPs and bytes (meta-device forward at the benchmark shapes) of problems not counted yet."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--problem-set", help="only this problem-set label")
        parser.add_argument("--level", type=int, help="only this level")
        parser.add_argument("--all-sources", action="store_true", help="older sources too, not only the latest")
        parser.add_argument("--force", action="store_true", help="count again problems already counted")

    def handle(self, *args: Any, **options: Any) -> None:
        problems = Problem.objects.order_by("problem_set", "level", "problem_id")
        if not options["all_sources"]:
            problems = problems.filter(is_latest=True)
        if options["problem_set"]:
            problems = problems.filter(problem_set=options["problem_set"])
        if options["level"] is not None:
            problems = problems.filter(level=options["level"])
        done, failed = problems_count_work(problems=problems.iterator(), force=options["force"])
        for problem in failed:
            self.stdout.write(f"not counted (cannot run on the meta device): {problem.key} {problem.name}")
        self.stdout.write(f"{done} problem(s) counted, {len(failed)} not")
