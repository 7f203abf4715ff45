"""The static audit of untrusted source in a child process under memory, CPU and wall-clock limits.

Parsing is not safe on hostile input: `y = ` followed by 100,000 minus signs makes `ast.parse` raise MemoryError
(CPython's parser stack), deep nesting makes the rules' recursion blow the stack, and a regex can backtrack for
minutes. In a Celery worker, MemoryError is fatal: one upload would stop all evaluation. So the worker never parses
kernel source itself: `audit_static_isolated` runs `audit_static` in `python -m evaluator.audit.isolated` (stdin:
the sources as JSON; stdout: the findings as JSON) and turns any failure of that process into one `audit_error`
finding on the kernel, which a reviewer sees.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from evaluator.audit.findings import Finding

MEMORY_LIMIT_BYTES = 1 << 30  # address space of the child: the audit of a 512 KiB file needs ~100 MiB
CPU_LIMIT_SECONDS = 30
WALL_LIMIT_SECONDS = 60
REPO_ROOT = Path(__file__).resolve().parents[2]


def audit_static_isolated(
    source: str, problem_source: str | None = None, *, kernelguard: bool = True, timeout: float = WALL_LIMIT_SECONDS
) -> list[Finding]:
    """`audit_static` in a limited child process; a child that fails yields one `audit_error` finding."""
    payload = json.dumps({"source": source, "problem_source": problem_source, "kernelguard": kernelguard})
    env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL") if key in os.environ}
    env.update(PYTHONPATH=str(REPO_ROOT), PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(  # our own module, the source travels on stdin
            [sys.executable, "-m", "evaluator.audit.isolated"],
            input=payload.encode(),
            capture_output=True,
            timeout=timeout,
            env=env,
            cwd=REPO_ROOT,
        )
    except subprocess.TimeoutExpired:
        return [_audit_error(f"the audit took longer than {timeout:.0f} s")]
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return [_audit_error(f"the audit process failed ({tail[0][:300]})")]
    try:
        return [_finding(item) for item in json.loads(done.stdout)]
    except (ValueError, TypeError, KeyError) as exc:
        return [_audit_error(f"the audit process answered badly ({exc})")]


def _audit_error(why: str) -> Finding:
    return Finding(
        rule="audit_error",
        severity="medium",
        verdict="suspicious",
        classes=("C3",),
        why=f"The static audit could not analyse this file within its limits: {why}. A reviewer should read it.",
    )


def _finding(item: dict) -> Finding:
    item = {key: value for key, value in item.items() if key != "evidence"}
    return Finding(**item | {"classes": tuple(item["classes"]), "lines": tuple(item["lines"])})


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_SECONDS, CPU_LIMIT_SECONDS))


def main() -> int:
    _limit()
    from evaluator.audit.static_rules import audit_static

    request = json.loads(sys.stdin.buffer.read())
    findings = audit_static(request["source"], request.get("problem_source"), kernelguard=request["kernelguard"])
    sys.stdout.write(json.dumps([finding.to_dict() for finding in findings]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
