"""manage.py import_hack_flags FILE --llm NAME [--submission ID] [--judge NAME]

Imports existing LLM-judge results (the paper's hack_flags.json style) as `import` audit flags. Accepted shapes:
- a JSON list of records, or {"flags": [records]};
- a mapping {key: record}, where keys like "level_1_problem_19_sample_0" fill in level/problem_id/sample.
A record: {level, problem_id, sample, llm?, verdict, classes, evidence, rationale, judge?, confidence?,
failing_input?, legit_specializations?}; verdict is clean/suspicious/hack (or hacked/legit/true/false), evidence a
list of quotes or of {lines, quote, why}. Quotes that are not verbatim in the kernel are dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluator.services.audit import hack_flags_import


class Command(BaseCommand):
    help = "Import judge results (hack_flags.json style) for one LLM's kernels as audit flags."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--llm", required=True, help="the LLM whose kernels the records are about")
        parser.add_argument("--submission", type=int, help="restrict matching to this submission id")
        parser.add_argument("--judge", default="paper", help="judge label for records without a 'judge' field")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            data = json.loads(options["file"].read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from exc
        report = hack_flags_import(
            data=data, llm_name=options["llm"], submission_id=options["submission"], judge_name=options["judge"]
        )
        for line in report.skipped:
            self.stdout.write(f"skipped: {line}")
        for line in report.errors:
            self.stderr.write(f"error: {line}")
        self.stdout.write(
            f"{len(report.created)} flag(s) imported, {len(report.skipped)} skipped, {len(report.errors)} error(s)."
        )
        if report.errors and not report.created:
            raise CommandError("nothing imported")
