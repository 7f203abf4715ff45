"""Run the GPU red-team kernels (tests/redteam/gpu/) through the evaluator on a CUDA machine.

    python3 benchmarks/redteam_gpu.py --out DIR [--jobs 12] [--only a1_]

Phase 1 builds every kernel in parallel (harness option compile_only, shared compile cache: load_inline costs ~47 s
per kernel); phase 2 evaluates them one at a time (quick options) so that timings do not disturb each other, controls
(legitimate twins) first. Writes DIR/redteam-gpu.json (every result record) and DIR/redteam-gpu.md (the verdict table).
Imports only the stdlib and the runner (no Django), so it runs with the GPU machine's own python3 and torch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "tests" / "redteam")]

import redteam_suite as rs  # noqa: E402 - needs the path above


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for redteam-gpu.json and redteam-gpu.md")
    parser.add_argument("--jobs", type=int, default=12, help="parallel builds")
    parser.add_argument("--only", default="", help="comma-separated substrings of case ids")
    parser.add_argument("--budget", type=float, default=0, help="seconds; later cases are listed as not run")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.gettempdir()) / "redteam-gpu-work"  # not under --out: only the reports come back
    cache = Path(os.environ.get("REDTEAM_COMPILE_CACHE", str(Path(tempfile.gettempdir()) / "redteam-compile-cache")))
    wanted = args.only.split(",")
    cases = [c for c in rs.load_cases(("gpu",)) if any(w in c.id for w in wanted)]
    cases.sort(key=lambda c: (not c.is_legit, c.id))  # controls first

    started = time.monotonic()

    def build(case: rs.Case) -> tuple[str, dict]:
        result = rs.evaluate(case, work_root=work, compile_cache_dir=cache, options={"compile_only": True})
        return case.id, result

    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        builds = dict(pool.map(build, cases))
    build_s = time.monotonic() - started
    for case_id, result in builds.items():
        print(f"build {case_id}: {result['status']} {result.get('error', '')[:200]}", flush=True)

    results: dict[str, dict] = {}
    not_run = []
    for case in cases:
        if args.budget and time.monotonic() - started > args.budget:
            not_run.append(case.id)
            continue
        if builds[case.id]["status"] == "compile_error":
            results[case.id] = builds[case.id]
            continue
        t0 = time.monotonic()
        results[case.id] = rs.evaluate(case, work_root=work, compile_cache_dir=cache)
        results[case.id]["_redteam_seconds"] = round(time.monotonic() - t0, 1)
        v = rs.judge(case, results[case.id], results)
        print(
            f"{'ok ' if v.ok else 'BAD'} {case.id:34s} expect={v.expected:10s} got={v.observed:10s} {v.detail}",
            flush=True,
        )
    verdicts = rs.verdict_table(cases, results)
    line = rs.summary_line(verdicts)
    env: dict[str, Any] = next(
        (r["environment"] for r in results.values() if r.get("environment", {}).get("device_name")), {}
    )
    (out / "redteam-gpu.json").write_text(json.dumps(results, indent=1, default=str))
    header = [
        f"- command: `python3 benchmarks/redteam_gpu.py --out $OUT --jobs {args.jobs}`",
        f"- device: {env.get('device_name')} ({env.get('arch')}), torch {env.get('torch')}, CUDA {env.get('cuda')}, "
        f"python {platform.python_version()}, harness {env.get('harness_version')}",
        f"- parallel build phase {build_s:.0f} s; total {time.monotonic() - started:.0f} s",
        f"- summary: {line}",
        f"- not run (time budget): {', '.join(not_run) or 'none'}",
        "",
    ]
    (out / "redteam-gpu.md").write_text("\n".join(header) + rs.markdown_table(cases, verdicts) + "\n")
    print(f"redteam-gpu: {line} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
