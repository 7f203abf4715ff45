"""The one projection of a result record (evaluator/harness/record.py) onto the database: the Evaluation's columns
that rankings sort and filter on, and its DistributionResult rows. Every query that filters or ranks on what a record
says reads these columns, never a JSON path into `result` (tests/foundation/test_no_json_path_queries.py).

Every writer of evaluations goes through it: the service that stores a harness record
(services/evaluations.evaluation_finish), the synthetic demo data (seed_demo_results) and the loader of exported GPU
runs (load_gpu_results), so a column never says something its record does not.
"""

from __future__ import annotations

from typing import Any

from evaluator.harness.record import Record
from evaluator.models import DistributionResult, Evaluation
from evaluator.values import finite_json, finite_number

ERROR_MAX_CHARS = 4000
SKIP_REASON_MAX_CHARS = 500
STACK_PART_MAX_CHARS = 200
# The environment's parts that make a software stack (evaluator.selectors.stacks), each with its column.
STACK_COLUMNS = {"torch": "env_torch", "cuda": "env_cuda", "driver": "env_driver", "device_name": "env_device_name"}


def evaluation_columns(result: Record) -> dict[str, Any]:
    """The Evaluation fields a record decides (keyword arguments of Evaluation(...) or of an update()). A kernel
    counts as correct only with status ok; numbers that are not finite (or not positive, for ratios and times)
    are stored as null."""
    ok = result.status == Evaluation.ResultStatus.OK
    low, high = result.speedup_ci or (None, None)
    sol = result.speed_of_light
    return {
        "result": finite_json(result.to_dict()),  # NaN and Inf are not JSON (PostgreSQL's jsonb refuses them)
        "result_status": result.status,
        "correct": bool(result.correct) if ok else False,
        "standard_correct": result.standard_correct,
        "reference_constant": result.reference_constant,
        "speedup": finite_number(result.speedup, positive=True),
        "speedup_ci_low": finite_number(low),
        "speedup_ci_high": finite_number(high),
        "speedup_fp32": finite_number(result.speedup_fp32, positive=True),
        "memory_ratio": finite_number(result.memory_ratio, positive=True),
        "candidate_ms": finite_number(result.timing.candidate.median_ms, positive=True),
        "error": result.error[:ERROR_MAX_CHARS],
        "timing_unstable": result.timing.unstable is True,
        "speed_of_light_fraction": finite_number(sol.fraction, positive=True) if sol is not None else None,
        **stack_columns(result),
    }


def stack_columns(result: Record) -> dict[str, str]:
    """The stack's columns: each part's text ("" where the record has none, or something other than text)."""
    env = result.environment
    return {
        column: value[:STACK_PART_MAX_CHARS] if isinstance(value := getattr(env, key), str) else ""
        for key, column in STACK_COLUMNS.items()
    }


def distribution_rows(result: Record) -> list[dict[str, Any]]:
    """The DistributionResult fields of each of the record's distributions (those the model names)."""
    rows = []
    for item in result.distributions:
        if item.name not in DistributionResult.Name.values:
            continue
        trials = item.trials
        rows.append(
            {
                "name": item.name,
                "passed": item.passed if isinstance(item.passed, bool) else None,
                "skipped": bool(item.skipped),
                "skip_reason": str(item.skip_reason or "")[:SKIP_REASON_MAX_CHARS],
                "max_abs_error": finite_number(item.max_abs_error),
                "max_rel_error": finite_number(item.max_rel_error),
                "trials": trials if isinstance(trials, int) and 0 <= trials < 32768 else 0,
                "errors": str(item.error or "")[:ERROR_MAX_CHARS],
            }
        )
    return rows
