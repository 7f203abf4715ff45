"""`python manage.py evaluate_kernel PROBLEM.py KERNEL.py --device cpu|cuda [--timeout S] [--json]`: a thin wrapper
over evaluator.runner.run_evaluation with the project's work, cache and interpreter settings."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluator.harness.protocol import result_to_json
from evaluator.runner import InfraError, run_evaluation


class Command(BaseCommand):
    help = "Evaluate one kernel file against one KernelBench problem file through the isolated harness."

    def add_arguments(self, parser) -> None:
        parser.add_argument("problem", type=Path)
        parser.add_argument("kernel", type=Path)
        parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
        parser.add_argument("--timeout", type=float, default=settings.EVALUATOR_HARNESS_TIMEOUT)
        parser.add_argument("--json", action="store_true", help="print the record as one JSON object")
        parser.add_argument("--quick", action="store_true", help="small trial and call counts")
        parser.add_argument("--compile-baseline", action="store_true")
        parser.add_argument("--hardware", default=settings.EVALUATOR_DEFAULT_HARDWARE)

    def handle(self, *args, **opts) -> None:
        try:
            record = run_evaluation(
                problem_source=opts["problem"].read_text(),
                kernel_source=opts["kernel"].read_text(),
                device=opts["device"],
                timeout=opts["timeout"],
                work_root=settings.EVALUATOR_WORK_DIR,
                compile_cache_dir=settings.EVALUATOR_COMPILE_CACHE_DIR,
                python=settings.EVALUATOR_PYTHON or None,
                require_sandbox=settings.EVALUATOR_REQUIRE_SANDBOX,
                options={
                    "quick": opts["quick"],
                    "compile_baseline": opts["compile_baseline"],
                    "hardware": opts["hardware"],
                },
            )
        except (OSError, InfraError) as exc:
            raise CommandError(str(exc)) from exc
        if opts["json"]:
            self.stdout.write(result_to_json(record))
            return
        speedup = record["speedup"]
        self.stdout.write(
            f"status={record['status']} correct={record['correct']} standard_correct={record['standard_correct']} "
            f"speedup={speedup if speedup is None else round(speedup, 3)} error={record['error'][:200]!r}"
        )
        self.stdout.write(json.dumps(record["checks"], indent=1))
