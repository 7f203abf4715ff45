"""Mark degenerate every problem whose evaluations found its reference output constant (evaluator.services.degenerate).

The same check runs after each finished evaluation; this command sweeps the existing data (e.g. after an import of
results, or after changing DEGENERATE_MIN_EVALUATIONS)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from evaluator.services.degenerate import problems_degenerate_sweep


class Command(BaseCommand):
    help = "Mark problems degenerate from the evaluations' reference_constant (cleared ones only on new evidence)."

    def handle(self, *args: Any, **options: Any) -> None:
        changed = problems_degenerate_sweep()
        for problem in changed:
            self.stdout.write(f"{problem.key} {problem.name}: {problem.degenerate} ({problem.inactive_reason})")
        self.stdout.write(f"{len(changed)} problem(s) marked or updated")
