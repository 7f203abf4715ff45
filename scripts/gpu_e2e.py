"""The product end to end on one machine (issue 20): the real web server, REST API, filesystem broker, Celery
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
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import io
import json
import os
import platform
import re
import secrets
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PROBLEMS_JSONL = REPO / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"
DEMO_DIR = REPO / "leaderboard" / "demo"
KERNELS_DIR = REPO / "benchmarks" / "kernels"
BENCH_RESULTS = REPO / "benchmarks" / "results" / "bundle-h200"
# benchmarks/kernels: (level, problem, sample) -> file. Samples 0 and 1 of L1/1, 0-2 of L1/19 (2: the decoy, added
# after the committed H200 run).
KERNEL_FILES = {
    (1, 1, 0): "L1_1_matmul_tiled_cuda.py",
    (1, 1, 1): "L1_1_matmul_torch.py",
    (1, 19, 0): "L1_19_relu_cuda.py",
    (1, 19, 1): "L1_19_relu_shape_hack.py",
    (1, 19, 2): "L1_19_relu_decoy_cuda.py",
    (2, 1, 0): "L2_1_conv_relu_bias_cuda.py",
    (3, 1, 0): "L3_1_mlp_fused_cuda.py",
}
# Reference wrappers (ModelNew = the problem's Model): problems that took 6-18 s each in the bundle benchmark on one
# H200 (benchmarks/results/bundle-h200.md, E) and passed the gate there, across the three levels.
WRAPPERS = [
    (1, 4), (1, 7), (1, 12), (1, 23), (1, 27), (1, 28), (1, 52), (1, 53),
    (2, 7), (2, 21), (2, 24), (2, 36), (2, 57), (2, 85), (2, 86),
    (3, 3), (3, 4), (3, 27), (3, 47),
]  # fmt: skip
TWO_GPU = [(1, 19, 0), (1, 19, 1)]  # --bundle two on a GPU: the gigabyte ReLU and its shape-guard hack
TWO_CPU = [(1, 1, 0), (1, 1, 1)]  # --device cpu: demo L1/1, a correct ReLU and the shape-guard hack (set "demo")
WRAPPER = (
    "\n\n# The reference itself, submitted as the kernel (scripts/gpu_e2e.py).\nclass ModelNew(Model):\n    pass\n"
)
OUT_FILES = ("gpu_e2e.json", "gpu_e2e.md", "gpu_e2e_logs.txt")


def log(msg: str) -> None:
    print(f"[gpu_e2e {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse_time(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


# --- The bundle -------------------------------------------------------------------------------------------------


def kernelbench_sources() -> dict[tuple[int, int], str]:
    out = {}
    for line in PROBLEMS_JSONL.read_text().splitlines():
        row = json.loads(line)
        out[(row["level"], row["problem_id"])] = row["source"]
    return out


def bundle_files(device: str, mode: str) -> dict[tuple[int, int, int], tuple[str, str]]:
    """(level, problem, sample) -> (source, kind) for the chosen bundle."""
    if device == "cpu":
        return {
            key: (
                (DEMO_DIR / "kernels" / f"level_{key[0]}_problem_{key[1]}_sample_{key[2]}_kernel.py").read_text(),
                "demo",
            )
            for key in TWO_CPU
        }
    if mode == "two":
        return {key: ((KERNELS_DIR / KERNEL_FILES[key]).read_text(), "benchmarks/kernels") for key in TWO_GPU}
    files = {key: ((KERNELS_DIR / name).read_text(), "benchmarks/kernels") for key, name in KERNEL_FILES.items()}
    sources = kernelbench_sources()
    for level, problem in WRAPPERS:
        files[(level, problem, 0)] = (sources[(level, problem)] + WRAPPER, "reference_wrapper")
    return files


def build_bundle(files: dict[tuple[int, int, int], tuple[str, str]], path: Path) -> str:
    """A KernelBench run folder, zipped (bundle format a: run/level_L_problem_P_sample_S_kernel.py)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for (level, problem, sample), (source, _) in sorted(files.items()):
            info = zipfile.ZipInfo(f"gpu_e2e_run/level_{level}_problem_{problem}_sample_{sample}_kernel.py")
            info.date_time = (2026, 1, 1, 0, 0, 0)  # same bytes every time: a re-run is a duplicate upload
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, source)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


# --- Install ----------------------------------------------------------------------------------------------------


def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kw)
    if done.returncode:
        raise RuntimeError(f"{shlex.join(map(str, argv))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def install(host: str, venv: Path, wheels: Path) -> str:
    """A venv that sees the machine's torch, filled from the wheels folder only. Returns its python."""
    if not any(wheels.glob("*.whl")):
        raise SystemExit(f"no wheels in {wheels}: run `make wheels` on a connected machine and carry the folder")
    run([host, "-m", "venv", "--system-site-packages", "--without-pip", "--clear", str(venv)])
    py = str(venv / "bin" / "python")
    # python3 may itself be a venv (then --system-site-packages reaches its base, not torch): name torch's folder
    # and the host's own site folders in a .pth, after the new venv's own site-packages.
    host_sites = run(
        [host, "-c", "import json, os, site, torch; print(json.dumps([os.path.dirname(os.path.dirname("
         "torch.__file__)), *site.getsitepackages()]))"]
    ).stdout  # fmt: skip
    purelib = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(purelib, "kbv_host_site.pth").write_text("\n".join(dict.fromkeys(json.loads(host_sites))) + "\n")
    requirements = venv / "requirements-no-torch.txt"
    lines = (REPO / "requirements.txt").read_text().splitlines()
    requirements.write_text("\n".join(x for x in lines if not x.strip().lower().startswith("torch")) + "\n")
    pip = [py, "-m", "pip"]
    if subprocess.run([*pip, "--version"], capture_output=True).returncode:
        pip = [host, "-m", "pip", "--python", py]  # no pip reachable from the venv: the host's, aimed at it
    run([*pip, "install", "-q", "--no-index", "--find-links", str(wheels), "--disable-pip-version-check",
         "-r", str(requirements)])  # fmt: skip
    run([py, "-c", "import django, rest_framework, celery, torch"])
    return py


# --- The deployment ---------------------------------------------------------------------------------------------


class Deployment:
    """Management commands, the web server and the workers against one VAR_DIR. Always call stop()."""

    def __init__(self, py: str, var: Path, env: dict[str, str], port: int) -> None:
        self.py, self.var, self.env, self.port = py, var, env, port
        self.url = f"http://127.0.0.1:{port}"
        self.procs: dict[str, subprocess.Popen] = {}

    def manage(self, *args: str, timeout: float = 300) -> str:
        return run([self.py, "manage.py", *args], cwd=REPO, env=self.env, timeout=timeout).stdout

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        logfile = open(self.var / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        self.procs[name] = subprocess.Popen(
            argv, cwd=REPO, env={**self.env, **(env or {})}, stdout=logfile, stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: stop() ends Celery's pool processes too
        )  # fmt: skip

    def start_web(self) -> None:
        self.start("web", [self.py, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.procs["web"].poll() is not None:
                raise RuntimeError("web server exited:\n" + self.tail("web"))
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.url}/api/llms/", timeout=5).read()  # noqa: S310
                return
            time.sleep(0.5)
        raise RuntimeError("web server did not answer:\n" + self.tail("web"))

    def start_worker(self, name: str, queues: str, slots: int, env: dict[str, str] | None = None,
                     beat: bool = False) -> None:  # fmt: skip
        argv = [self.py, "-m", "celery", "-A", "config", "worker", "-Q", queues, "-c", str(slots),
                "--prefetch-multiplier", "1", "-n", f"{name}@%h", "-l", "INFO", "--without-gossip",
                "--without-mingle"]  # fmt: skip
        if beat:
            argv += ["--beat", "--schedule", str(self.var / "celerybeat-schedule")]
        self.start(name, argv, env)

    def alive(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is None]

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)

    def tail(self, name: str, chars: int = 3000) -> str:
        path = self.var / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=30) as response:  # noqa: S310
            return json.loads(response.read())


SETUP_USER = """
from django.contrib.auth import get_user_model
User = get_user_model()
if not User.objects.filter(username={user!r}).exists():
    User.objects.create_user(username={user!r}, password={password!r})
"""

IMPORT_DEMO = """
from pathlib import Path
from leaderboard.services.problems import problems_import_path
print("demo: " + problems_import_path(path=Path({path!r}), problem_set="demo", demo=True).summary())
"""

EXPORT = r"""
import json, pathlib
from django.core import serializers
from django.apps import apps
MODELS = {{m.__name__: m for m in apps.get_models()}}  # wherever the apps keep them
LLM, Problem, Submission, Kernel = (MODELS[n] for n in ("LLM", "Problem", "Submission", "Kernel"))
AuditFlag, DistributionResult, Evaluation = (MODELS[n] for n in ("AuditFlag", "DistributionResult", "Evaluation"))
sub = Submission.objects.get(pk={submission})
llm = LLM.objects.get(pk=sub.llm_id)
llm.owner_id = None
llm.owner_group_id = None
llm.notes = {label!r}
sub.uploader_id = None
kernels = list(Kernel.objects.filter(submission=sub).order_by("pk"))
problems = list(Problem.objects.filter(pk__in={{k.problem_id for k in kernels}}).order_by("pk"))
evaluations = list(Evaluation.objects.filter(kernel__submission=sub).order_by("pk"))
for ev in evaluations:
    ev.task_id = ""
distributions = list(DistributionResult.objects.filter(evaluation__in=evaluations).order_by("pk"))
flags = list(AuditFlag.objects.filter(kernel__in=kernels).order_by("pk"))
for flag in flags:
    flag.reviewed_by_id = None
objects = [llm, *problems, sub, *kernels, *evaluations, *distributions, *flags]
pathlib.Path({path!r}).write_text(serializers.serialize("json", objects, indent=1))
print(json.dumps({{"objects": len(objects), "kernels": len(kernels), "evaluations": len(evaluations)}}))
"""


# --- Reading the result back ------------------------------------------------------------------------------------


def machine_facts(python: str, device: str) -> dict[str, Any]:
    """torch, CUDA and GPU as the harness's interpreter sees them (the record's environment says it again)."""
    code = (
        "import json, torch, platform; c = torch.cuda.is_available(); print(json.dumps({'torch': torch.__version__, "
        "'cuda': torch.version.cuda, 'gpu_count': torch.cuda.device_count() if c else 0, "
        "'gpu': torch.cuda.get_device_name(0) if c else None, 'python': platform.python_version()}))"
    )
    facts = json.loads(run([python, "-c", code]).stdout.strip().splitlines()[-1])
    facts.update(host=platform.node(), cpus=os.cpu_count(), device=device, platform=platform.platform())
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        if smi.returncode == 0:
            facts["nvidia_smi"] = smi.stdout.strip().splitlines()
    return facts


def phase_figures(result: dict[str, Any] | None) -> dict[str, float | None]:
    phases = (result or {}).get("phases") or {}
    gpu = sum(phases.get(k) or 0.0 for k in ("compile", "correctness", "timing", "gpu_wait"))
    total = phases.get("total")
    return {
        "total_s": total,
        "start_s": phases.get("start"),
        "workers_s": phases.get("workers"),
        "compile_s": phases.get("compile"),
        "correctness_s": phases.get("correctness"),
        "timing_s": phases.get("timing"),
        "gpu_wait_s": phases.get("gpu_wait"),
        "shutdown_s": phases.get("shutdown"),
        # outside compile, the GPU phases and waiting for the GPU: what bundle-h200.md calls the overhead
        "overhead_s": round(total - gpu, 3) if total is not None else None,
    }


def verdict(row: dict[str, Any]) -> str:
    if row["status"] != "done":
        return f"{row['status']}: {row['error'][:100]}" if row.get("error") else row["status"]
    if row["result_status"] != "ok":
        return f"{row['result_status']}: {row['error'][:100]}"
    if row["correct"]:
        return f"correct {row['speedup']:.3f}x" if row.get("speedup") else "correct"
    failed = row.get("failed") or []
    return f"incorrect ({', '.join(failed)} failed)" if failed else "incorrect"


def collect(dep: Deployment, submission_id: int, kinds: dict[tuple[int, int, int], str]) -> dict[str, Any]:
    sub = dep.get(f"/api/submissions/{submission_id}/")
    rows = []
    for k in (sub.get("progress") or {}).get("kernels", []):
        ev = dep.get(f"/api/evaluations/{k['evaluation_id']}/")
        result = ev.get("result") or {}
        started, finished = parse_time(ev.get("started_at")), parse_time(ev.get("finished_at"))
        env = result.get("environment") or {}
        failed = [d["name"] for d in ev.get("distributions") or [] if d.get("passed") is False]
        failed += [c["name"] for c in result.get("checks") or [] if isinstance(c, dict) and c.get("passed") is False
                   and not failed]  # fmt: skip
        row = {
            "key": f"L{k['level']}/{k['problem_id']}",
            "sample": k["sample"],
            "kind": kinds.get((k["level"], k["problem_id"], k["sample"]), ""),
            "evaluation_id": ev["id"],
            "status": ev["status"],
            "result_status": ev.get("result_status") or "",
            "correct": ev.get("correct"),
            "standard_correct": ev.get("standard_correct"),
            "speedup": ev.get("speedup"),
            "speedup_ci": [ev.get("speedup_ci_low"), ev.get("speedup_ci_high")],
            "speedup_fp32": ev.get("speedup_fp32"),
            "memory_ratio": ev.get("memory_ratio"),
            "candidate_ms": ev.get("candidate_ms"),
            "failed": failed,
            "error": ev.get("error") or "",
            "worker": ev.get("worker"),
            "attempts": ev.get("attempts"),
            "queued_at": ev.get("queued_at"),
            "started_at": ev.get("started_at"),
            "finished_at": ev.get("finished_at"),
            "celery_wall_s": round((finished - started).total_seconds(), 3) if started and finished else None,
            "sandbox": env.get("sandbox"),
            "handover": env.get("output_handover"),
            "compile_cache": env.get("compile_cache"),
            **phase_figures(result),
        }
        row["celery_extra_s"] = (
            round(row["celery_wall_s"] - row["total_s"], 3) if row["celery_wall_s"] and row["total_s"] else None
        )
        row["verdict"] = verdict(row)
        rows.append(row)
    environment = next(
        ((dep.get(f"/api/evaluations/{r['evaluation_id']}/").get("result") or {}).get("environment") for r in rows
         if r["result_status"]), None)  # fmt: skip
    return {"submission": sub, "kernels": rows, "environment": environment}


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


def benchmark_comparison(keys: set[str]) -> dict[str, Any]:
    """The bundle benchmark's figures for the same problems (bundle-h200.md E: no standby; H: --prestart)."""
    out: dict[str, Any] = {}
    for run_name, file in (("E_no_prestart", "bundle-1gpu-full.jsonl"), ("H_prestart", "bundle-1gpu-prestart.jsonl")):
        path = BENCH_RESULTS / file
        if not path.exists():
            continue
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        rows = [r for r in rows if r.get("phase") == "evaluate" and r["key"] in keys]
        figures = {r["key"]: phase_figures({"phases": r.get("phases")}) | {"wall_s": r["wall_s"]} for r in rows}
        out[run_name] = {
            "file": str(path.relative_to(REPO)),
            "problems": len(figures),
            "median_overhead_s": median([f["overhead_s"] for f in figures.values()]),
            "median_total_s": median([f["total_s"] for f in figures.values()]),
            "per_problem": {k: {"total_s": v["total_s"], "overhead_s": v["overhead_s"]} for k, v in figures.items()},
        }
    return out


def num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return "" if value is None else str(value)


def markdown(record: dict[str, Any]) -> str:
    f = record["facts"]
    s = record["summary"]
    lines = [
        f"# Upload -> Celery worker -> leaderboard, end to end ({record['hardware']}, {record['date_utc']})",
        "",
        "```",
        record["command"],
        "```",
        "",
        f"- Device: {f.get('gpu') or 'CPU'} x{f.get('gpu_count') or 0} ({'; '.join(f.get('nvidia_smi') or [])}), "
        f"{f.get('cpus')} cores, {f.get('platform')}; torch {f.get('torch')}, CUDA {f.get('cuda')}, "
        f"Python {f.get('python')}",
        f"- Deployment: `manage.py runserver`, {record['workers']} Celery worker(s) on `eval-{record['hardware']}` "
        f"(-c {record['slots']}, prefetch 1, EVALUATOR_PRESTART={record['prestart']}) and one on `default` with beat; "
        f"SQLite + filesystem broker in a private VAR_DIR; DJANGO_DEBUG=False (sandbox required), "
        f"sandbox modes seen: {', '.join(s['sandbox_modes']) or '-'}",
        f"- Bundle: {s['kernels']} kernels for {s['problems']} problems ({record['bundle']['mode']}), "
        f"sha256 {record['bundle']['sha256'][:16]}..., problem set `{record['problem_set']}`",
        f"- **Upload to last verdict: {s['upload_to_last_verdict_s']} s** (server clock: submission created to the "
        f"last evaluation finished; {s['client_wait_s']} s by the client's clock); setup before the upload "
        f"{s['setup_s']} s ({', '.join(f'{k} {v} s' for k, v in record['steps'].items())})",
        f"- Verdicts: {s['correct']} correct of {s['kernels']}; statuses {s['statuses']}"
        + ("" if record.get("complete") else " (**incomplete**: the client stopped waiting first)"),
        f"- Per evaluation (medians): harness total {s['median_total_s']} s, overhead outside compile/GPU phases/GPU "
        f"wait {s['median_overhead_s']} s (start {s['median_start_s']} s), Celery beyond the harness "
        f"{s['median_celery_extra_s']} s",
        "",
        "| kernel | kind | verdict | speedup (95% CI) | vs FP32 | memory | Celery wall s | harness s | overhead s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in record["kernels"]:
        ci = r["speedup_ci"]
        ci_text = f" ({ci[0]:.3f}-{ci[1]:.3f})" if ci and ci[0] and ci[1] else ""
        speed = f"{r['speedup']:.3f}{ci_text}" if r["speedup"] else ""
        lines.append(
            f"| {r['key']} s{r['sample']} | {r['kind']} | {r['verdict']} | {speed} | "
            f"{num(r['speedup_fp32'])} | {num(r['memory_ratio'])} | "
            f"{num(r['celery_wall_s'])} | {num(r['total_s'])} | {num(r['overhead_s'])} |"
        )
    lines += [
        "",
        "## Leaderboard rows (`/api/leaderboard/`)",
        "",
        "| rank | kind | name | attempted | correct | speedup | fast_1 % |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in record["leaderboard"]:
        lines.append(
            f"| {row.get('rank') or ''} | {row['kind']} | {row['name']} | {row['attempted']} | {row['correct']} | "
            f"{num(row['speedup'])} | {num(next(iter((row.get('fast_p') or {}).values()), None))} |"
        )
    comp = record.get("benchmark_comparison") or {}
    if comp:
        lines += ["", "## Against the bundle benchmark (benchmarks/bundle_gpu.py, same problems)", ""]
        for name, c in comp.items():
            lines.append(
                f"- {name} ({c['file']}): {c['problems']} of these problems, median harness total "
                f"{c['median_total_s']} s, median overhead {c['median_overhead_s']} s"
            )
    return "\n".join(lines) + "\n"


# --- Main -------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="output folder (record, fixture, log tails)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--bundle", choices=["full", "two"], default="full", help="full: ~25 kernels; two: two kernels")
    p.add_argument("--no-install", action="store_true", help="use this interpreter (it has the requirements)")
    p.add_argument("--wheels", type=Path, default=REPO / "wheels")
    p.add_argument("--work", type=Path, help="venv, VAR_DIR and bundle (default: a new temporary folder)")
    p.add_argument("--hardware", help="hardware label (default h200 on cuda, cpu on cpu)")
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
    hardware = args.hardware or ("h200" if args.device == "cuda" else "cpu")
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
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL",
                                                            "CACHE_URL", "SQLITE_PATH", "CELERY_QUEUE_DIR",
                                                            "DJANGO_SETTINGS_MODULE")}  # fmt: skip
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
            subprocess.run([host, "-m", "evaluator.harness.privileges", "--open"], cwd=REPO, env=env, check=False)
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
        client = subprocess.run(
            [py, "-m", "client", "submit", str(bundle_path), "--llm", llm, "--organisation",
             f"{facts.get('gpu') or 'CPU'} · torch {facts['torch']} · CUDA {facts['cuda']}", "--notes", label,
             "--hardware", hardware, "--problem-set", problem_set, "--wait", "--interval", "2",
             "--timeout", str(args.timeout), "--url", dep.url, "--token", token],
            cwd=REPO, capture_output=True, text=True, timeout=args.timeout + 120,
        )  # fmt: skip
        client_wait = round(time.monotonic() - t0, 1)
        print(client.stdout, flush=True)
        match = re.search(r"^submission (\d+):", client.stdout, re.M)
        if client.returncode:  # 2 after --timeout: record what finished (the record says it is incomplete)
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
        exported = json.loads(
            dep.manage("shell", "-c", EXPORT.format(submission=submission_id, label=label,
                                                    path=str(args.out / fixture_name))).strip().splitlines()[-1]
        )  # fmt: skip
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
            "complete": client.returncode == 0 and all(r["status"] in ("done", "failed") for r in rows),
        }
        print("\nLeaderboard rows:", flush=True)
        for row in record["leaderboard"]:
            print(f"  {row.get('rank') or '-':>3} {row['kind']:8} {row['name']:40} attempted {row['attempted']:3} "
                  f"correct {row['correct']:3} speedup {row['speedup']}", flush=True)  # fmt: skip
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
    log(f"done: {s['correct']}/{s['kernels']} correct, upload to last verdict {s['upload_to_last_verdict_s']} s, "
        f"total {record['total_wall_s']} s; record in {args.out}")  # fmt: skip
    return 0 if record["complete"] and s["statuses"].get("failed", 0) == 0 and s["kernels"] == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())
