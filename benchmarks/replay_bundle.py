"""Replay a bundle on the CPU: from the rows of a GPU run (bundle_gpu.py, their phases), predict a bundle's wall time,
exclusive share and GPU use under a scheduling policy, so a policy change is tried without the GPU. Standard
library only (the problems' meta-device counts are read from benchmarks/results/replay-problems.json, made by
replay_problems.py with torch).

Each evaluation's uncontended work comes from its row (replay_work.py: the lock waits taken out, the slowdown of
its neighbours divided out); a problem the run did not reach gets its class's median work (one pair and a peak over
1 GiB, one pair small, several pairs) and its own declared memory. The bundle is load_bundle's, heaviest first, with
the load_inline kernels built by compile jobs and queued when built, as bundle_gpu.py runs it; replay_sim.py then
schedules it through the slots, the memory ledger and the GPU lock.

    python3 benchmarks/replay_bundle.py                          # the full bundle, today's policy, 8 slots
    python3 benchmarks/replay_bundle.py --slots 12 --deadline 500
    python3 benchmarks/replay_bundle.py --check benchmarks/results/policy-h200/bundle-3.jsonl --declare io \
        --slots 8 --deadline 500                                 # predicted vs measured, one run
    python3 benchmarks/replay_bundle.py --calibrate              # the parallelisms and the drain, from the rows
    python3 benchmarks/replay_bundle.py --what-if                # policy variants side by side (Markdown)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bundle_gpu import load_bundle
from benchmarks.replay_cli import add_arguments, calibrate, what_if
from benchmarks.replay_jobs import (
    DEFAULT_ROWS,
    Source,
    build_policy,
    bundle_items,
    check_row,
    end_error,
    make_jobs,
    measured,
    predict,
    run_items,
)
from benchmarks.replay_problems import load_table
from benchmarks.replay_work import read_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()
    policy = build_policy(args)
    table = load_table()
    if args.calibrate:
        return calibrate(args, policy, table)
    source = Source(args.rows or DEFAULT_ROWS, policy, table, args.declare)
    if args.what_if:
        return what_if(args, policy, source)
    if args.check:
        rows = read_rows(args.check)
        jobs, from_rows = make_jobs(run_items(rows), source)
    else:
        jobs, from_rows = make_jobs(bundle_items(args.only, args.limit, args.repeats), source)
    got = predict(jobs, policy, source, args.first)
    outcomes, jobs = got.pop("_outcomes"), got.pop("_jobs")
    out: dict[str, Any] = {"jobs": len(jobs), "jobs_from_rows": from_rows, "policy": vars(args) | {"rows": None}}
    out["predicted"] = got
    if args.check:
        out["measured"] = measured(rows)
        out["end_error"] = end_error(rows, jobs, outcomes)
        if args.markdown:
            print(check_row(args.check.stem, out))
            return 0
    out["class_medians_of_rows"] = {c: {k: round(v, 2) for k, v in m.items()} for c, m in source.medians.items()}
    out["fills"] = source.evidence({b["key"]: b["expected_ms"] for b in load_bundle([1, 2, 3])})
    print(json.dumps(out, indent=1, default=lambda v: str(v) if not isinstance(v, float) or math.isfinite(v) else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
