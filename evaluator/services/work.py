"""The work of a problem: FLOPs and bytes of one forward at its benchmark shapes, stored with the problem.

Counted by the harness's meta-device forward (harness/workers/flops.py): by `manage.py count_flops` for imported
problems (the 270 KernelBench problems take minutes on two cores, so not at import), and from the first evaluation's
record (`speed_of_light`), which the harness fills on every evaluation anyway. Both store the same keys
(COUNT_KEYS).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalogue.models import Problem
from catalogue.services import problem_set_work
from evaluator.harness.record import SpeedOfLight

# A problem's `work_counts`, the same keys from either source: `count_source` (workers/flops.py) and a record's
# speed of light, which carries the reference worker's count under these names (since schema 4; older records hold
# only the FLOPs' parts). The tensor-core precision the bound used follows from `dtype` (roofline.precision_of).
COUNT_KEYS = ("matrix_flops", "vector_flops", "input_bytes", "output_bytes", "param_bytes", "dtype")


def problem_count_work(*, problem: Problem, force: bool = False) -> dict[str, Any] | None:
    """Count one problem's work (its source runs on the meta device in this process: problem files are trusted)
    and store it; None when it cannot run there."""
    from evaluator.harness.workers.flops import count_source  # torch: imported only when counting

    counts = count_source(problem.source)
    if counts is None:
        return None
    problem_set_work(
        problem_id=problem.pk,
        flops=counts["flops"],
        bytes_moved=counts["bytes"],
        counts={k: counts[k] for k in COUNT_KEYS if k in counts},
        force=force,
    )
    return counts


def problems_count_work(*, problems: Iterable[Problem], force: bool = False) -> tuple[int, list[Problem]]:
    """Count every problem not counted yet (all with `force`): (counted, the ones that could not be)."""
    done, failed = 0, []
    for problem in problems:
        if problem.bytes_moved is not None and not force:
            continue
        if problem_count_work(problem=problem, force=force) is None:
            failed.append(problem)
        else:
            done += 1
    return done, failed


def problem_work_from_record(*, problem_id: int, speed_of_light: SpeedOfLight | None) -> None:
    """Fill an uncounted problem's work from an evaluation's `speed_of_light` (the reference worker counted it)."""
    if speed_of_light is None:
        return
    flops, nbytes = speed_of_light.flops, speed_of_light.bytes
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        return
    if not isinstance(flops, int) or isinstance(flops, bool) or flops < 0:
        return
    problem_set_work(
        problem_id=problem_id,
        flops=flops,
        bytes_moved=nbytes,
        counts={k: value for k in COUNT_KEYS if (value := getattr(speed_of_light, k)) is not None},
    )
