"""Step 10 of scripts/gpu_e2e.py: the record against the bundle benchmark's figures, and as Markdown."""

from __future__ import annotations

import json
from typing import Any

from .collect import median, phase_figures
from .common import BENCH_RESULTS, REPO
from .processes import table


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
        "## Who ran as whom (/proc, sampled during the upload)",
        "",
        *table(record.get("processes") or []),
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
