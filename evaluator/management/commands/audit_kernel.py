"""manage.py audit_kernel KERNEL.py [--problem PROBLEM.py] [--judge NAME] [--json]

Prints the static findings of one kernel file (our rules + KernelGuard) and, when a configured judge is named, that
judge's verdict. Touches no database rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluator.audit.config import configured_judges, judge_status
from evaluator.audit.findings import max_severity
from evaluator.audit.judges import JudgeConfigError, run_judge
from evaluator.audit.static_rules import audit_static, is_flagged


class Command(BaseCommand):
    help = "Audit one kernel file: static rules + KernelGuard, and an LLM judge when one is named and configured."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kernel", type=Path, help="the ModelNew kernel file")
        parser.add_argument("--problem", type=Path, help="the reference KernelBench problem file (enables size rules)")
        parser.add_argument("--judge", help="name of a configured LLM judge (AUDIT_JUDGES) to ask as well")
        parser.add_argument("--no-kernelguard", action="store_true", help="only the project's own rules")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        kernel_source = _read(options["kernel"])
        problem_source = _read(options["problem"]) if options["problem"] else None
        findings = audit_static(kernel_source, problem_source, kernelguard=not options["no_kernelguard"])
        report: dict[str, Any] = {
            "kernel": str(options["kernel"]),
            "problem": str(options["problem"]) if options["problem"] else None,
            "static": {
                "flagged": is_flagged(findings),
                "max_severity": max_severity(findings),
                "findings": [f.to_dict() for f in findings],
            },
        }
        if options["judge"]:
            report["judge"] = _judge(options["judge"], kernel_source, problem_source)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, default=str))
            return
        self._print_text(report)

    def _print_text(self, report: dict[str, Any]) -> None:
        static = report["static"]
        self.stdout.write(f"{report['kernel']}: {len(static['findings'])} finding(s), worst {static['max_severity']}")
        for f in static["findings"]:
            where = f"line {f['lines'][0]}" if f["lines"] else "-"
            self.stdout.write(f"  [{f['severity']:>6}] {f['rule']} ({','.join(f['classes'])}) {where}: {f['why']}")
            if f["quote"]:
                self.stdout.write(f"           > {f['quote']}")
        if "judge" in report:
            self.stdout.write("judge: " + json.dumps(report["judge"], default=str))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from exc


def _judge(name: str, kernel_source: str, problem_source: str | None) -> dict[str, Any]:
    try:
        config = next((j for j in configured_judges() if j.name == name), None)
    except JudgeConfigError as exc:
        return {"status": "not_configured", "message": str(exc)}
    if config is None:
        status = judge_status()
        return {"status": "not_configured", "message": f"no judge named {name!r}. {status.message}"}
    return run_judge(config, kernel_source=kernel_source, problem_source=problem_source).to_dict()
