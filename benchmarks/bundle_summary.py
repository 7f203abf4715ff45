"""The summary of a bundle run (benchmarks/bundle_gpu.py): where the time went, what the exclusive GPU hold was
spent on, and the spread of kernels evaluated more than once. Standard library only."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any


def summarise(records: list[dict[str, Any]], args: Any, total_s: float, bundle_size: int) -> dict[str, Any]:
    """The run's summary (TAG_summary.json) from its rows and its command-line arguments."""
    evals = [r for r in records if r["phase"] == "evaluate"]
    not_started = {r["key"] for r in records if r["phase"] == "skipped"} - {r["key"] for r in evals}
    compiles = [r for r in records if r["phase"] == "compile"]

    def phase_sum(rows: list[dict[str, Any]], name: str) -> float:
        return round(sum((r.get("phases") or {}).get(name) or 0.0 for r in rows), 1)

    statuses: dict[str, int] = {}
    for r in evals:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {
        "bundle_size": bundle_size,
        "evaluated": len(evals),
        "not_started": len(not_started),
        "wall_s": round(total_s, 1),
        "statuses": statuses,
        "correct": sum(1 for r in evals if r["correct"]),
        "compile_jobs": len(compiles),
        "compile_wall_sum_s": round(sum(r["wall_s"] for r in compiles), 1),
        "sum_eval_wall_s": round(sum(r["wall_s"] for r in evals), 1),
        "sum_start_s": phase_sum(evals, "start"),
        "sum_workers_s": phase_sum(evals, "workers"),
        "sum_standby_workers_s": phase_sum(evals, "standby_workers"),
        "sum_shutdown_s": phase_sum(evals, "shutdown"),
        "sum_correctness_s": phase_sum(evals, "correctness"),
        "sum_timing_s": phase_sum(evals, "timing"),
        "sum_timing_setup_s": phase_sum(evals, "timing_setup"),
        "sum_timing_loop_s": phase_sum(evals, "timing_loop"),
        "sum_timing_checks_s": phase_sum(evals, "timing_checks"),
        "sum_gpu_wait_s": phase_sum(evals, "gpu_wait"),
        **exclusive_summary(evals),
        "timing_unstable": sum(1 for r in evals if r.get("unstable")),
        "sandbox": sorted({str(r.get("sandbox")) for r in evals}),
        "sum_queued_s": round(sum(r["queued_s"] for r in evals), 1),
        "handover": sorted({str(r["handover"]) for r in evals}),
        "gpus": args.gpus,
        "slots_per_gpu": args.slots,
        "prestart": args.prestart,
        "timing_budget_s": args.timing_budget,
        "min_calls": args.min_calls,
        "spread": spread(evals),
        "declarations": declarations(evals),
    }


def declarations(evals: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether what each evaluation declared for a worker (half its gpu_hold.reserved_bytes) covered what its
    reference worker's allocator held of the device at its most (gpu_hold.reference_reserved_peak_bytes: cached
    blocks included, what the device's other evaluations meet; its CUDA context, which the declaration also
    covers, not counted): a declaration below it lets neighbours run out. `peak_reached_in` counts the reference
    worker's commands during which it reached that peak (gpu_hold.reference_reserved_peak_by_command: the one that
    raised it highest), `over_reached_in` names it for each evaluation over: what the declaration misses."""
    ratios, reached = {}, {}
    for r in evals:
        hold = r.get("gpu_hold") or {}
        peak, declared = hold.get("reference_reserved_peak_bytes"), hold.get("reserved_bytes")
        if peak and declared:
            ratios[r["key"]] = peak / (declared / 2)
            steps: dict[str, int] = hold.get("reference_reserved_peak_by_command") or {}
            if steps:
                reached[r["key"]] = max(steps, key=lambda name: steps[name])
    over = sorted(key for key, ratio in ratios.items() if ratio > 1)
    return {
        "read": len(ratios),
        "max_reserved_over_declared": round(max(ratios.values()), 3) if ratios else None,
        "median_reserved_over_declared": round(statistics.median(ratios.values()), 3) if ratios else None,
        "over_declaration": over,
        "peak_reached_in": dict(Counter(reached.values()).most_common()),
        "over_reached_in": {key: reached[key] for key in over if key in reached},
    }


def exclusive_summary(evals: list[dict[str, Any]]) -> dict[str, Any]:
    """What the exclusive GPU hold was spent on over the run (the record's phases, orchestrator._gpu): the timed
    loops' share of it (target: at least 80 %), the rest (set-up, probes, re-checks), and the process pairs'
    start-up, which runs with the hold given back (any start under it is counted)."""

    def total(name: str) -> float:
        return sum((r.get("phases") or {}).get(name) or 0.0 for r in evals)

    held, loops = total("exclusive_s"), total("exclusive_timing_s")
    starts = [s for r in evals for s in (r.get("pair_starts") or [])]
    return {
        "sum_exclusive_s": round(held, 1),
        "sum_exclusive_timing_s": round(loops, 1),
        "sum_exclusive_other_s": round(total("exclusive_other_s"), 1),
        "exclusive_timing_share": round(loops / held, 3) if held else None,
        "pair_starts": len(starts),
        "sum_pair_start_s": round(sum(s.get("seconds") or 0.0 for s in starts), 1),
        "pair_starts_under_exclusive_lock": int(total("pair_starts_under_exclusive_lock")),
    }


def launched_summary(launched: dict[str, Any] | None) -> dict[str, Any] | None:
    """The record's launched_kernels, cut to what a results table needs: the flag and the five longest kernels."""
    if not launched:
        return None
    out: dict[str, Any] = {k: launched.get(k) for k in ("custom_launched", "custom_defined", "error")}
    for side in ("candidate", "baseline"):
        kernels = (launched.get(side) or {}).get("kernels") or []
        out[side] = [[k.get("name", "")[:80], k.get("count"), k.get("share")] for k in kernels[:5]]
    return out


def spread(evals: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kernel evaluated more than once: the speedups, (max - min) / median, the largest distance from their
    median (the goal for short problems: within 5 %) and how many repeats' intervals contain that median (goal: all)."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for r in evals:
        if r["speedup"]:
            by_key.setdefault(r["key"], []).append(r)
    out = {}
    for key, rows in by_key.items():
        if len(rows) < 2:
            continue
        values = [r["speedup"] for r in rows]
        median = statistics.median(values)
        cis = [r.get("speedup_ci") for r in rows]
        deviation = max(abs(v - median) for v in values) / median
        out[key] = {
            "speedups": [round(v, 4) for v in values],
            "cis": cis,
            "relative_spread": (max(values) - min(values)) / median,
            "max_deviation_from_median": deviation,
            "cis_containing_median": sum(1 for ci in cis if ci and ci[0] <= median <= ci[1]),
            "repeats": len(values),
            "unstable": sum(1 for r in rows if r.get("unstable")),
            # the targets: every repeat within 5 % (stretch 2 %) of the median, every interval above 0 and under
            # 2x wide (high / low)
            "within_5pct": deviation <= 0.05,
            "within_2pct": deviation <= 0.02,
            "cis_above_0_under_2x": all(ci and ci[0] > 0 and ci[1] / ci[0] < 2 for ci in cis),
        }
    return out
