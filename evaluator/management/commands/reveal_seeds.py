"""`manage.py reveal_seeds [--evaluation ID]`: reveal the master seeds that are due (beat runs it hourly), or one
evaluation's now (staff)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from evaluator.services.seeds import seeds_reveal, seeds_reveal_due


class Command(BaseCommand):
    help = "Reveal due master seeds (superseded evaluations, or SEEDS_REVEAL_AFTER_DAYS old)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--evaluation", type=int, help="reveal this evaluation's seeds now, due or not")

    def handle(self, *args, **opts) -> None:
        if opts["evaluation"]:
            if not seeds_reveal(evaluation_id=opts["evaluation"]):
                raise CommandError(f"evaluation {opts['evaluation']} has no kept master seed")
            self.stdout.write(f"revealed the seeds of evaluation {opts['evaluation']}")
            return
        self.stdout.write(f"revealed {seeds_reveal_due()} master seed(s)")
