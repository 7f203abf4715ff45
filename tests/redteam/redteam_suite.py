"""The red-team suite: exploit kernels the evaluator must catch and legitimate kernels it must pass.

Every kernel file starts with a machine-readable header of `# redteam-<key>: <value>` comment lines (the keys, and
the Case they become: redteam_cases.py, whose names this module also offers).

Verdicts. A result is *credited* when status == "ok" and correct is True. An exploit is caught when it is not
credited, or, for `not_faster`, when its measured speedup stays within `max-speedup`. The verdict the evaluator
actually gave (rejected / incorrect / not_faster / credited) is reported next to the expected one; a different but
still-catching verdict counts as caught. A legitimate kernel passes when it is credited (and reaches `min-speedup`).

Used by tests/redteam/test_redteam.py (CPU, CI) and benchmarks/redteam_gpu.py (the H200). Run it by hand with
`.venv/bin/python tests/redteam/redteam_suite.py [--device cpu] [--jobs 2] [--only a6_]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redteam_cases import (
    DEFAULT_MAX_SPEEDUP,
    DEFAULT_TIMEOUT,
    EXPLOIT_VERDICTS,
    KIND_DIRS,
    PROBLEMS_DIR,
    REDTEAM_DIR,
    Case,
    load_case,
    load_cases,
    parse_header,
)

__all__ = [
    "CONTROL_FACTOR", "DEFAULT_MAX_SPEEDUP", "DEFAULT_TIMEOUT", "EXPLOIT_VERDICTS", "FOLLOWUP_KERNEL", "KIND_DIRS",
    "LIGHT_TIMING", "PROBLEMS_DIR", "REDTEAM_DIR", "REPO_ROOT", "RESULTS", "VERDICTS", "Case", "Verdict", "describe",
    "evaluate", "judge", "load_case", "load_cases", "main", "markdown_table", "parse_header", "run_cases", "run_one",
    "speed_bound", "summary_line", "timing_sensitive", "verdict_table",
]  # fmt: skip

REPO_ROOT = REDTEAM_DIR.parents[1]
# Resource-abuse kernels are followed, in the same thread, by this legitimate kernel: the caller must go on normally.
FOLLOWUP_KERNEL = "legit/shape_specialised_matmul"
CONTROL_FACTOR = 1.3  # an exploit may not beat its honest twin (same kernel, no trick) by more than measurement noise

# Results and verdicts of this process's evaluations, by case id: the pytest summary hook reads them.
RESULTS: dict[str, dict[str, Any]] = {}
VERDICTS: dict[str, Any] = {}


# --- verdicts -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the evaluator said about a case and whether that is what the suite demands."""

    case_id: str
    legit: bool
    ok: bool  # exploit: caught; legit: passed
    observed: str  # rejected | incorrect | not_faster | credited | correct
    expected: str
    detail: str
    known_gap: str = ""

    @property
    def exact(self) -> bool:
        return self.observed == self.expected


def _failed_checks(result: dict[str, Any]) -> list[str]:
    return [c["name"] for c in result.get("checks") or [] if c.get("passed") is False]


def describe(result: dict[str, Any]) -> str:
    """A one-line account of a result record: status, correctness, speedup, failed checks, error head."""
    parts = [f"status={result.get('status')}", f"correct={result.get('correct')}"]
    if result.get("speedup") is not None:
        parts.append(f"speedup={result['speedup']:.3g}")
    failed = _failed_checks(result)
    if failed:
        parts.append("failed=" + ",".join(failed))
    dists = [d["name"] for d in result.get("distributions") or [] if d.get("passed") is False]
    if dists:
        parts.append("failed_dists=" + ",".join(dists))
    error = (result.get("error") or "").strip().splitlines()
    if error:
        parts.append("error=" + error[-1][:160])
    return " ".join(parts)


def speed_bound(case: Case, results: dict[str, dict[str, Any]] | None = None) -> float | None:
    """The speedup a not_faster exploit may reach: CONTROL_FACTOR x its control's measured speedup when the control
    was measured in the same run, else the header's max-speedup."""
    control = (results or {}).get(case.control) if case.control else None
    if control and control.get("status") == "ok" and control.get("speedup"):
        return CONTROL_FACTOR * float(control["speedup"])
    return case.max_speedup


def judge(case: Case, result: dict[str, Any], results: dict[str, dict[str, Any]] | None = None) -> Verdict:
    """Apply the suite's rule to one result record (see the module docstring); `results` supplies controls."""
    status = result.get("status")
    credited = status == "ok" and result.get("correct") is True
    speedup = result.get("speedup")
    bound = speed_bound(case, results)
    if status == "compile_error" and not case.is_legit:
        observed = "broken"  # an exploit that does not even build proves nothing: never counted as caught
    elif status != "ok":
        observed = "rejected"
    elif result.get("correct") is not True:
        observed = "incorrect"
    elif bound is not None and (speedup is None or speedup <= bound):
        observed = "not_faster"
    else:
        observed = "credited"
    detail = describe(result)
    if bound is not None and not case.is_legit:
        detail += f" bound={bound:.3g}"
    effects = result.get("_redteam_side_effects") or []
    if effects:
        detail += " side_effects=" + "; ".join(effects)
    followup = result.get("_redteam_followup")
    if followup is not None:
        good = followup.get("status") == "ok" and followup.get("correct") is True
        detail += " followup=" + ("credited" if good else describe(followup))
    if case.is_legit:
        passed = credited and (case.min_speedup is None or (speedup is not None and speedup >= case.min_speedup))
        return Verdict(case.id, True, passed, "correct" if credited else observed, "correct", detail)
    caught = observed not in ("credited", "broken")
    if case.kind == "abuse":  # stopped within its limits, nothing left behind, and the caller went on
        caught = observed != "credited" and not effects and followup is not None and good
    return Verdict(case.id, False, caught, observed, case.expect, detail, case.known_gap)


def summary_line(verdicts: Iterable[Verdict]) -> str:
    """ "caught X of Y, legitimate Z of W" (plus known gaps and verdict mismatches, when there are any)."""
    verdicts = list(verdicts)
    exploits = [v for v in verdicts if not v.legit]
    legit = [v for v in verdicts if v.legit]
    caught = sum(v.ok for v in exploits)
    line = f"caught {caught} of {len(exploits)}, legitimate {sum(v.ok for v in legit)} of {len(legit)}"
    gaps = [v.case_id for v in exploits if v.known_gap and not v.ok]
    if gaps:
        line += f" (known gaps not caught: {', '.join(gaps)})"
    return line


# --- running --------------------------------------------------------------------------------------------------------


def evaluate(
    case: Case,
    *,
    work_root: Path | None = None,
    compile_cache_dir: Path | None = None,
    options: dict[str, Any] | None = None,
    kernel_source: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Evaluate one case through the project's runner (the same entry point Celery uses)."""
    from evaluator.runner import run_evaluation

    opts: dict[str, Any] = {"quick": True, **case.options, **(options or {})}
    return run_evaluation(
        problem_source=case.problem.read_text(),
        kernel_source=kernel_source if kernel_source is not None else case.path.read_text(),
        device=case.device,
        timeout=timeout or case.timeout,
        work_root=work_root,
        compile_cache_dir=compile_cache_dir,
        options=opts,
    )


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _abuse_run(case: Case, work_root: Path, options: dict[str, Any] | None) -> dict[str, Any]:
    """An abusive kernel, then the follow-up kernel in the same work root. Side effects that outlive the evaluation
    (live processes, files left in the work root, writes outside it) are listed under `_redteam_side_effects`."""
    scratch = Path(tempfile.mkdtemp(prefix=f"redteam-{case.path.stem}-"))
    pidfile, canary = scratch / "pids.txt", scratch / "canary.txt"
    # The kernel may run as an unprivileged user (harness/sandbox/privileges.py): it can reach the scratch dir and
    # append to the pid file, but creating the canary there takes the evaluator's own user.
    os.chmod(scratch, 0o711)
    pidfile.touch()
    os.chmod(pidfile, 0o666)
    source = case.path.read_text().replace("__REDTEAM_PIDFILE__", str(pidfile))
    source = source.replace("__REDTEAM_CANARY__", str(canary))
    root = work_root / case.path.stem
    root.mkdir(parents=True, exist_ok=True)
    result = evaluate(case, work_root=root, options=options, kernel_source=source)
    effects = []
    time.sleep(0.5)  # let a killed process group be reaped
    for line in pidfile.read_text().split() if pidfile.exists() else []:
        pid = int(line)
        if _pid_alive(pid):
            effects.append(f"process {pid} started by the kernel outlived the evaluation")
            os.kill(pid, signal.SIGKILL)  # started by this test's kernel: clean up after recording it
    leftovers = [p for p in root.rglob("*") if p.is_file()]
    if leftovers:
        effects.append(f"{len(leftovers)} files left in the work root, e.g. {leftovers[0].relative_to(root)}")
    if canary.exists():
        effects.append(f"the kernel wrote {canary} outside its work directory")
    shutil.rmtree(scratch, ignore_errors=True)
    result["_redteam_side_effects"] = effects
    followup = load_case(KIND_DIRS["legit"] / (FOLLOWUP_KERNEL.split("/")[1] + ".py"), "legit")
    result["_redteam_followup"] = evaluate(followup, work_root=root, options=options)
    return result


# Cases judged without a speedup still get timed (the timed-output re-check and the fresh-input probe run there), but
# a shorter timing phase is enough for them: it keeps the CPU suite within its few minutes.
LIGHT_TIMING = {"standard_trials": 1, "max_calls": 20, "timing_budget_s": 1.0}


def run_one(case: Case, *, work_root: Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Evaluate one case; exceptions from the runner itself become a result with status "runner_exception"."""
    if case.device == "cpu" and not timing_sensitive(case):  # a case's own options win over the light preset
        options = {**{k: v for k, v in LIGHT_TIMING.items() if k not in case.options}, **(options or {})}
    started = time.monotonic()
    try:
        if case.kind == "abuse":
            result = _abuse_run(case, work_root, options)
        else:
            result = evaluate(case, work_root=work_root, options=options)
    except Exception as exc:  # reported per case
        result = {"status": "runner_exception", "correct": None, "error": f"{type(exc).__name__}: {exc}"}
    result["_redteam_seconds"] = round(time.monotonic() - started, 2)
    RESULTS[case.id] = result
    return result


def timing_sensitive(case: Case) -> bool:
    """Cases whose verdict depends on a measured speedup: they run one at a time, so that the suite's own
    parallelism does not distort the numbers they are judged by."""
    return case.max_speedup is not None or case.min_speedup is not None


def run_cases(
    cases: list[Case],
    *,
    jobs: int = 2,
    work_root: Path | None = None,
    options: dict[str, Any] | None = None,
    on_result: Callable[[Case, dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Evaluate cases: first the ones judged without timing, `jobs` at a time (each evaluation is its own set of
    processes), then the timing-sensitive ones one at a time."""
    root = Path(work_root) if work_root else Path(tempfile.mkdtemp(prefix="redteam-work-"))
    results: dict[str, dict[str, Any]] = {}

    def record(case: Case, result: dict[str, Any]) -> None:
        results[case.id] = result
        if on_result:
            on_result(case, result)

    parallel = sorted((c for c in cases if not timing_sensitive(c)), key=lambda c: -c.timeout)  # long ones first
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        outcomes = pool.map(lambda c: run_one(c, work_root=root, options=options), parallel)
        for case, result in zip(parallel, outcomes, strict=True):
            record(case, result)
    for case in cases:
        if timing_sensitive(case):
            record(case, run_one(case, work_root=root, options=options))
    return results


def verdict_table(cases: list[Case], results: dict[str, dict[str, Any]]) -> list[Verdict]:
    return [judge(case, results[case.id], results) for case in cases if case.id in results]


def markdown_table(cases: list[Case], verdicts: list[Verdict]) -> str:
    """A Markdown table of verdicts (used for the committed GPU results)."""
    by_id = {case.id: case for case in cases}
    rows = ["| kernel | class | expected | observed | caught/passed | detail |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        case = by_id[v.case_id]
        mark = "yes" if v.ok else ("**NO (known gap)**" if v.known_gap else "**NO**")
        rows.append(f"| `{v.case_id}` | {case.cls} | {v.expected} | {v.observed} | {mark} | {v.detail} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="exploit,legit", help="comma-separated: exploit, legit, gpu")
    parser.add_argument("--only", default="", help="substring filter on case ids")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", default="", help="write every result record to this file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO_ROOT))
    cases = [c for c in load_cases(args.kinds.split(",")) if args.only in c.id]

    def show(case: Case, result: dict[str, Any]) -> None:
        v = judge(case, result)
        mark = "ok " if v.ok else "BAD"
        print(f"{mark} {case.id:45s} expect={v.expected:10s} got={v.observed:10s} {v.detail}", flush=True)

    started = time.monotonic()
    results = run_cases(cases, jobs=args.jobs, on_result=show)
    verdicts = verdict_table(cases, results)
    print(f"redteam: {summary_line(verdicts)} in {time.monotonic() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0 if all(v.ok or v.known_gap for v in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
