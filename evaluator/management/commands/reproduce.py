"""`manage.py reproduce EVALUATION_ID [--device cpu|cuda] [--json] [--strict]`: re-run a verdict from its record and
its revealed master seed, print the reproduction's per-distribution figures, the recorded ones, and which differ,
by how much and why (evaluator.services.reproduction). It exits with an error when a verdict differs or what the
verdict stands on does not hold together (an edited column, a master that is not the published digest's, a
swapped source); with --strict also when an error figure differs."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from evaluator.harness.orchestrator.reproduce import Difference
from evaluator.runner import InfraError
from evaluator.services.reproduction import NotReproducible, evaluation_reproduce


class Command(BaseCommand):
    help = "Re-run an evaluation with its revealed seeds and compare the verdict's figures."

    def add_arguments(self, parser) -> None:
        parser.add_argument("evaluation", type=int, help="the evaluation's id (the inspector shows it)")
        parser.add_argument("--device", choices=["cpu", "cuda"], help="default: the recorded hardware's device")
        parser.add_argument("--python", help="the interpreter that runs the harness (default EVALUATOR_PYTHON)")
        parser.add_argument("--json", action="store_true", help="print both records and the differences as JSON")
        parser.add_argument(
            "--strict", action="store_true", help="exit with an error when any error figure differs too"
        )
        parser.add_argument("--unrevealed", action="store_true", help="staff on the server: use seeds not revealed yet")

    def handle(self, *args, **opts) -> None:
        try:
            result = evaluation_reproduce(
                evaluation_id=opts["evaluation"],
                device=opts["device"],
                python=opts["python"],
                unrevealed=opts["unrevealed"],
            )
        except (NotReproducible, InfraError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        comparison = result.comparison
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "evaluation": result.evaluation_id,
                        "identical": not comparison.differences and not comparison.tampered,
                        "verdict_differs": comparison.verdict_differs,
                        "summary": comparison.summary(),
                        "tampered": [_difference(d) for d in comparison.tampered],
                        "differences": [_difference(d) for d in comparison.differences],
                        "environment_differences": [
                            {"key": d.figure, "before": d.before, "after": d.after} for d in comparison.environment
                        ],
                        "recorded": result.original,
                        "reproduced": result.again,
                    },
                    default=str,
                )
            )
        else:
            self.stdout.write(f"evaluation {result.evaluation_id}\n{result.report()}")
        if comparison.verdict_differs:  # never only a figure: exit non-zero whatever --strict says
            raise CommandError(comparison.summary())
        if opts["strict"] and comparison.differences:
            raise CommandError(f"{len(comparison.differences)} figure(s) differ from the recorded verdict")


def _difference(d: Difference) -> dict:
    return {
        "figure": d.figure,
        "before": d.before,
        "after": d.after,
        "delta": d.delta,
        "cause": d.cause,
        "verdict": d.verdict,
    }
