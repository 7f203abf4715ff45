"""Print a bundle_gpu.py results file one line per evaluation (speedup, CI, medians, timing CPU, pairs, the
kernel's CPU time while the baseline was timed): for device runs whose output is read from the console.

    python3 benchmarks/rows.py OUT/TAG.jsonl [...]
"""

from __future__ import annotations

import json
import sys

for path in sys.argv[1:]:
    with open(path) as fh:
        rows = [json.loads(line) for line in fh]
    for r in rows:
        if r.get("phase") == "compile":
            continue
        cpu, busy = r.get("cpu") or {}, r.get("candidate_cpu") or {}
        ci = [round(x, 3) for x in r.get("speedup_ci") or []]
        print(
            path.rsplit("/", 1)[-1],
            r.get("status"),
            round(r.get("speedup") or 0, 3),
            ci,
            "tf32",
            round(r.get("tf32_ms") or 0, 3),
            "kern",
            round(r.get("kernel_ms") or 0, 3),
            "cpu",
            cpu.get("pinned"),
            "pairs",
            [round(p.get("speedup") or 0, 3) for p in r.get("pairs") or []],
            "busy",
            busy.get("during_baseline_ms"),
            "/",
            busy.get("baseline_wall_ms"),
            "wall",
            r.get("wall_s"),
        )
