"""Step 7 of scripts/gpu_e2e.py: the machine's facts, and every evaluation of the upload read back through the REST API
as one row each (verdict, phases, overhead)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
from typing import Any

from .common import parse_time, run
from .stack import Deployment


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
            capture_output=True,
            text=True,
            timeout=30,
        )
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
        failed += [
            c["name"]
            for c in result.get("checks") or []
            if isinstance(c, dict) and c.get("passed") is False and not failed
        ]
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
        (
            (dep.get(f"/api/evaluations/{r['evaluation_id']}/").get("result") or {}).get("environment")
            for r in rows
            if r["result_status"]
        ),
        None,
    )
    return {"submission": sub, "kernels": rows, "environment": environment}


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None
