"""The product end to end on one machine: the real web server, REST API, filesystem broker, Celery
workers and harness, nothing standing in for any of them.

    python3 scripts/gpu_e2e.py OUT_DIR                        # GPU machine: install from wheels/, full bundle
    python3 scripts/gpu_e2e.py OUT_DIR --device cpu --bundle two --no-install   # CPU (tests/pipeline)

Steps: (1) a virtualenv with --system-site-packages (and a .pth to the folder holding the machine's torch, for a
python3 that is itself a venv), filled from `wheels/` (`make wheels`) with no index; skipped by --no-install, which
uses this interpreter; (2) migrate SQLite in a private VAR_DIR; (3) import the KernelBench problems the repository
carries (leaderboard/data/kernelbench/problems.jsonl; the CPU run also imports the CPU-sized demo set); (4) a user and
its API token (manage.py create_api_token); (5) `manage.py runserver`, one Celery worker per GPU on queue
eval-LABEL (CUDA_VISIBLE_DEVICES, -c SLOTS, prefetch 1) and one worker for the default queue with beat, on the
embedded defaults (SQLite + filesystem broker), DJANGO_DEBUG=False so the sandbox is required; (6) build the bundle
(a KernelBench run folder, zipped) and upload it with `python -m client submit --wait` (the REST API, the token);
(7) read back every evaluation and the leaderboard through the API and print them; (8) export the run's rows as a
fixture (`manage.py load_gpu_results` loads it); (9) stop everything; (10) write OUT_DIR/gpu_e2e.json and .md.

Files in OUT_DIR: gpu_e2e.json, gpu_e2e.md, the fixture (--fixture-name), gpu_e2e_logs.txt (tails of the logs).
The steps live in scripts/e2e/ (bundle, install, stack, collect, report); this file runs them in order.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The steps are the package scripts/e2e: reachable from this file's folder however the file is started (python3
# scripts/gpu_e2e.py puts the folder first on sys.path already; tests load the file by its path).
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e.bundle import KERNEL_FILES, build_bundle, bundle_files
from e2e.collect import collect, machine_facts, median
from e2e.common import DEMO_DIR, OUT_FILES, PROBLEMS_JSONL, REPO, free_port, log, parse_time, utcnow
from e2e.install import install
from e2e.processes import Watch
from e2e.report import benchmark_comparison, markdown
from e2e.stack import EXPORT, IMPORT_DEMO, SETUP_USER, Deployment

__all__ = ["KERNEL_FILES", "build_bundle", "bundle_files", "main"]  # tests/pipeline/test_gpu_e2e_script.py uses these


def hardware_label(gpu_name: str) -> str:
    """The board's label for a GPU from torch's name for it: "NVIDIA H100 80GB HBM3" -> h100, "NVIDIA H200" ->
    h200 (a run on another card must not be filed under the H200's board)."""
    found = re.search(r"\b(RTX\s*\d{4}|[A-Z]{1,3}\d{1,4}[A-Z]?)\b", gpu_name.upper())
    return re.sub(r"\s+", "", found.group(1)).lower() if found else "gpu"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="output folder (record, fixture, log tails)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--bundle", choices=["full", "two"], default="full", help="full: ~25 kernels; two: two kernels")
    p.add_argument("--no-install", action="store_true", help="use this interpreter (it has the requirements)")
    p.add_argument("--wheels", type=Path, default=REPO / "wheels")
    p.add_argument("--work", type=Path, help="venv, VAR_DIR and bundle (default: a new temporary folder)")
    p.add_argument("--hardware", help="hardware label (default: from the GPU's name, h200 for an H200; cpu on cpu)")
    p.add_argument("--gpus", type=int, help="Celery GPU workers, one per GPU (default: every GPU torch sees)")
    p.add_argument("--slots", type=int, help="evaluations at once per worker (default 4 on cuda, 1 on cpu)")
    p.add_argument("--no-prestart", action="store_true", help="no standby harnesses (default on for cuda)")
    p.add_argument("--llm", help="LLM name of the upload (default e2e-LABEL-DATE)")
    p.add_argument("--fixture-name", default="", help="file name of the exported rows (default LABEL_e2e.json)")
    p.add_argument("--timeout", type=float, default=400, help="seconds to wait for the last verdict")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    started = time.monotonic()
    date = utcnow()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="kbv-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)  # the evaluation's own unprivileged user must reach the venv's python
    var = work / "var"
    var.mkdir(exist_ok=True)
    steps: dict[str, float] = {}

    def step(name: str, t0: float) -> None:
        steps[name] = round(time.monotonic() - t0, 1)
        log(f"{name}: {steps[name]} s")

    host = sys.executable
    t0 = time.monotonic()
    py = host if args.no_install else install(host, work / "venv", args.wheels)
    if not args.no_install:
        step("install", t0)
    facts = machine_facts(host, args.device)
    log(f"machine: {json.dumps(facts)}")
    if args.device == "cuda" and not facts["gpu_count"]:
        raise SystemExit("--device cuda but torch sees no GPU")
    hardware = args.hardware or (hardware_label(facts.get("gpu") or "") if args.device == "cuda" else "cpu")
    gpus = args.gpus or (facts["gpu_count"] if args.device == "cuda" else 1)
    slots = args.slots or (4 if args.device == "cuda" else 1)
    prestart = args.device == "cuda" and not args.no_prestart
    problem_set = "demo" if args.device == "cpu" else "kernelbench-main"
    llm = args.llm or f"e2e-{hardware}-{date:%Y-%m-%d}"
    label = (
        f"Measured by scripts/gpu_e2e.py on {date:%Y-%m-%d}: {facts.get('gpu') or 'CPU'} (hardware label {hardware}), "
        f"torch {facts['torch']}, CUDA {facts['cuda']}; uploaded through the REST API and evaluated by a Celery "
        f"worker. Kernels: benchmarks/kernels and reference wrappers (ModelNew = the problem's Model)."
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "REDIS_URL",
            "CACHE_URL",
            "SQLITE_PATH",
            "CELERY_QUEUE_DIR",
            "DJANGO_SETTINGS_MODULE",
        )
    }
    env.update(
        SECRET_KEY=secrets.token_urlsafe(32),
        DJANGO_DEBUG="False",  # production settings: the kernel sandbox is required (EVALUATOR_REQUIRE_SANDBOX)
        VAR_DIR=str(var),
        EVALUATOR_DEFAULT_HARDWARE=hardware,
        EVALUATOR_HARDWARE_LABELS=hardware,
        EVALUATOR_PRESTART=str(prestart),
        PROBLEM_SET_DEFAULT=problem_set,
        PYTHONUNBUFFERED="1",
        LOG_LEVEL=os.environ.get("LOG_LEVEL", "INFO"),
    )
    if args.device == "cuda":
        env.update(EVALUATOR_PYTHON=host)  # the machine's own python3 runs the harness (stdlib + torch)
        env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        env.setdefault("MAX_JOBS", "4")
    port = args.port or free_port()
    dep = Deployment(py, var, env, port)
    files = bundle_files(args.device, args.bundle)
    kinds = {key: kind for key, (_, kind) in files.items()}
    record: dict[str, Any] = {}
    try:
        t0 = time.monotonic()
        dep.manage("migrate", "--noinput")
        dep.manage("createcachetable")
        step("migrate", t0)
        t0 = time.monotonic()
        log(dep.manage("import_problems", str(PROBLEMS_JSONL), "--problem-set", "kernelbench-main").strip())
        if args.device == "cpu":
            log(dep.manage("shell", "-c", IMPORT_DEMO.format(path=str(DEMO_DIR / "problems"))).strip())
        step("import_problems", t0)
        t0 = time.monotonic()
        user = "gpu-e2e"
        dep.manage("shell", "-c", SETUP_USER.format(user=user, password=secrets.token_urlsafe(16)))
        token = dep.manage("create_api_token", user).strip().rsplit(" ", 1)[-1]
        if args.device == "cuda":  # kernels run as a leased unprivileged uid: it must reach python and the repo
            subprocess.run(
                [host, "-m", "evaluator.harness.sandbox.privileges", "--open"], cwd=REPO, env=env, check=False
            )
        step("user_and_token", t0)
        t0 = time.monotonic()
        dep.start_web()
        for gpu in range(gpus):
            worker_env = {"CUDA_VISIBLE_DEVICES": str(gpu)} if args.device == "cuda" else {}
            queues = f"eval-{hardware}" if args.device == "cuda" else f"eval-{hardware},default"
            name = f"{hardware}-gpu{gpu}" if args.device == "cuda" else f"{hardware}-worker"
            dep.start_worker(name, queues, slots, worker_env, beat=args.device == "cpu")
        if args.device == "cuda":
            dep.start_worker("default", "default", 1, {"CUDA_VISIBLE_DEVICES": ""}, beat=True)
        step("start_web_and_workers", t0)
        bundle_path = work / f"gpu_e2e_{args.device}_{args.bundle}.zip"
        sha = build_bundle(files, bundle_path)
        log(f"bundle: {len(files)} kernels, {len({k[:2] for k in files})} problems, {bundle_path}")
        upload_wall = utcnow()
        t0 = time.monotonic()
        watch = Watch(var)  # who runs as whom while the evaluations run (uids and capabilities from /proc)
        watch.start()
        client = subprocess.run(
            [
                py,
                "-m",
                "client",
                "submit",
                str(bundle_path),
                "--llm",
                llm,
                "--organisation",  # who made the kernels; the hardware and stack are in the notes and the records
                "KernelBench-Verified end-to-end run",
                "--notes",
                label,
                "--hardware",
                hardware,
                "--problem-set",
                problem_set,
                "--wait",
                "--interval",
                "2",
                "--timeout",
                str(args.timeout),
                "--url",
                dep.url,
                "--token",
                token,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=args.timeout + 120,
        )
        client_wait = round(time.monotonic() - t0, 1)
        processes = watch.stop()
        print(client.stdout, flush=True)
        match = re.search(r"^submission (\d+):", client.stdout, re.M)
        if client.returncode not in (0, 3):  # 3: not every kernel passed; 2 after --timeout: record what finished
            log(f"client exited {client.returncode}: {client.stderr[-2000:]}")
        if not match:
            raise RuntimeError(f"no submission id in the client's output:\n{client.stdout}\n{client.stderr[-3000:]}")
        submission_id = int(match.group(1))
        got = collect(dep, submission_id, kinds)
        board = dep.get(f"/api/leaderboard/?hardware={hardware}&problem_set={problem_set}")
        rows = got["kernels"]
        created = parse_time(got["submission"].get("created_at")) or upload_wall
        finished = [t for r in rows if r["finished_at"] and (t := parse_time(r["finished_at"])) is not None]
        last = max(finished, default=None)
        fixture_name = args.fixture_name or f"{hardware}_e2e.json"
        # written in VAR_DIR (the app's: manage.py runs as its service user when started as root), then moved here
        export = EXPORT.format(submission=submission_id, label=label, path=str(var / fixture_name))
        exported = json.loads(dep.manage("shell", "-c", export).strip().splitlines()[-1])
        shutil.copyfile(var / fixture_name, args.out / fixture_name)
        statuses: dict[str, int] = {}
        for r in rows:
            name = r["result_status"] or r["status"]
            statuses[name] = statuses.get(name, 0) + 1
        record = {
            "command": shlex.join(
                [Path(host).name, *map(str, sys.argv if argv is None else ["scripts/gpu_e2e.py", *argv])]
            ),
            "date_utc": f"{date:%Y-%m-%d %H:%M} UTC",
            "device": args.device,
            "hardware": hardware,
            "problem_set": problem_set,
            "llm": llm,
            "label": label,
            "workers": gpus,
            "slots": slots,
            "prestart": prestart,
            "facts": facts,
            "environment": got["environment"],
            "processes": processes,
            "steps": steps,
            "bundle": {"mode": args.bundle, "sha256": sha, "kernels": len(files), "file": bundle_path.name},
            "submission": {
                k: got["submission"].get(k)
                for k in ("id", "status", "kernel_count", "evaluated_count", "correct_count", "created_at", "page_url")
            },
            "summary": {
                "kernels": len(rows),
                "problems": len({r["key"] for r in rows}),
                "correct": sum(1 for r in rows if r["correct"]),
                "statuses": statuses,
                "sandbox_modes": sorted({str(r["sandbox"]) for r in rows if r["sandbox"]}),
                "upload_to_last_verdict_s": round((last - created).total_seconds(), 1) if last else None,
                "client_wait_s": client_wait,
                "setup_s": round(sum(steps.values()), 1),
                "median_celery_wall_s": median([r["celery_wall_s"] for r in rows]),
                "median_total_s": median([r["total_s"] for r in rows]),
                "median_overhead_s": median([r["overhead_s"] for r in rows]),
                "median_start_s": median([r["start_s"] for r in rows]),
                "median_celery_extra_s": median([r["celery_extra_s"] for r in rows]),
                "sum_overhead_s": round(sum(r["overhead_s"] or 0 for r in rows), 1),
            },
            "kernels": rows,
            "leaderboard": board.get("rows", []),
            "fixture": {"file": fixture_name, **exported},
            "benchmark_comparison": benchmark_comparison({r["key"] for r in rows}) if args.device == "cuda" else {},
            "client_output": client.stdout,
            "client_exit": client.returncode,
            "complete": client.returncode in (0, 3) and all(r["status"] in ("done", "failed") for r in rows),
        }
        print("\nLeaderboard rows:", flush=True)
        for row in record["leaderboard"]:
            print(
                f"  {row.get('rank') or '-':>3} {row['kind']:8} {row['name']:40} attempted {row['attempted']:3} "
                f"correct {row['correct']:3} speedup {row['speedup']}",
                flush=True,
            )
        print("\nVerdicts:", flush=True)
        for r in rows:
            print(f"  {r['key']:7} s{r['sample']} {r['kind']:18} {r['verdict']}", flush=True)
    finally:
        dep.stop()
        left = dep.alive()
        with open(args.out / OUT_FILES[2], "w") as fh:
            for name in dep.procs:
                fh.write(f"===== {name} (last 20000 characters)\n{dep.tail(name, 20000)}\n")
        if left:
            log(f"still running after stop: {left}")
    record["total_wall_s"] = round(time.monotonic() - started, 1)
    (args.out / OUT_FILES[0]).write_text(json.dumps(record, indent=1, default=str))
    (args.out / OUT_FILES[1]).write_text(markdown(record))
    s = record["summary"]
    log(
        f"done: {s['correct']}/{s['kernels']} correct, upload to last verdict {s['upload_to_last_verdict_s']} s, "
        f"total {record['total_wall_s']} s; record in {args.out}"
    )
    return 0 if record["complete"] and s["statuses"].get("failed", 0) == 0 and s["kernels"] == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())
