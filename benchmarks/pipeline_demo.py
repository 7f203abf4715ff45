"""Time from upload to last result for the demo bundle on the embedded defaults (SQLite + filesystem broker).

Starts a fresh deployment in a temporary VAR_DIR (migrate, demo problems, one user with a token), a web server and
N Celery workers (queue eval-cpu, concurrency 1 each), uploads the 8 demo kernels through the REST API as the CLI
client does, and polls the submission until every evaluation is finished.

    .venv/bin/python benchmarks/pipeline_demo.py [--workers 1] [--repeat 1]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import zipfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.http import get_json, post_multipart  # noqa: E402
from tests.pipeline.stack import Stack  # noqa: E402  (the same subprocess deployment the e2e tests use)


def demo_bundle() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((ROOT / "leaderboard" / "demo" / "kernels").glob("level_*_kernel.py")):
            zf.write(path, f"demo_run/{path.name}")
    return buf.getvalue()


def parse_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def one_run(workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="kbv-bench-") as tmp:
        stack = Stack(Path(tmp))
        try:
            stack.setup()
            stack.start_web()
            for i in range(workers):
                stack.start_worker(f"worker{i}")
            time.sleep(3)  # let the workers connect, so we time the pipeline and not their boot
            t0 = time.time()
            created = post_multipart(
                f"{stack.url}/api/submissions/",
                fields={"llm": "bench-llm", "problem_set": "demo", "hardware": "cpu"},
                files={"bundle": ("demo_run.zip", demo_bundle())},
                token=stack.token,
            )
            t_accepted = time.time()
            while True:
                sub = get_json(created["url"])
                if sub["status"] in {"done", "failed"}:
                    break
                time.sleep(0.25)
            t_done = time.time()
            evals = get_json(f"{stack.url}/api/evaluations/?submission={created['id']}&limit=100")["results"]
        finally:
            stack.stop()
    runs = [parse_time(e["finished_at"]) - parse_time(e["started_at"]) for e in evals if e["finished_at"]]
    first_start = min(parse_time(e["started_at"]) for e in evals)
    return {
        "kernels": sub["kernel_count"],
        "correct": sub["correct_count"],
        "status": sub["status"],
        "upload_s": t_accepted - t0,
        "upload_to_first_start_s": first_start - t0,
        "upload_to_last_result_s": t_done - t0,
        "evaluation_median_s": statistics.median(runs),
        "evaluation_max_s": max(runs),
        "errors": {e["id"]: e["error"][:300] for e in evals if e["result_status"] == "runtime_error"},
        "verdicts": sorted(
            f"{e['id']}:{e['result_status']}:{'correct' if e['correct'] else 'incorrect'}" for e in evals
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = [one_run(args.workers) for _ in range(args.repeat)]
    print(
        json.dumps(
            {
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "workers": args.workers,
                "loadavg_before": load_before,
                "loadavg_after": os.getloadavg(),
                "runs": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
