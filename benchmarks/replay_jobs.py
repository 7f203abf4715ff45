"""The bundle replay's jobs (replay_bundle.py runs it): the evaluations a replay schedules, their work taken from a
GPU run's rows (Source), their policy scaling, the prediction and its comparison with what a run measured. Standard
library only.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.bundle_gpu import load_bundle
from benchmarks.replay_model import Job, Policy, Segment
from benchmarks.replay_problems import GIB, baseline_ms, declared_bytes
from benchmarks.replay_sim import Outcome, simulate
from benchmarks.replay_work import (
    class_medians,
    deflate,
    job_of,
    median,
    median_job,
    problem_class,
    read_rows,
    row_pieces,
)
from evaluator.harness.orchestrator.declared_memory import start_bytes

HERE = Path(__file__).resolve().parent

RESULTS = HERE / "results"
CALIBRATION_RUN = RESULTS / "policy-h200" / "bundle-3.jsonl"
# The work of a prediction: the 2026-12-04 runs under today's holds (the repeats left out: one problem five times).
DEFAULT_ROWS = [
    RESULTS / "policy-h200" / f"{name}.jsonl" for name in ("bundle-3", "sample-1", "sample-2", "real8-1", "real8-2")
]
H200_GIB = 139.80  # torch's total_memory of the H200 (the out-of-memory message in bundle-3.jsonl)
PAIRS_BELOW_MS = 1.0  # protocol.Options.pairs_below_ms: a sub-ms baseline is timed in process_pairs (2) pairs
# Launch-bound (timed in several pairs: pair_policy.pairs_wanted) when the TF32 baseline spends under this much GPU
# time per operator its forward dispatches on the meta device: measured, the eight cuDNN RNNs of L3 sit at 0.7-1.5 us
# per operator and the launch-bound CNNs at 10-24 (3-4 pairs each), every problem a run timed in one pair only
# above 170 (benchmarks/results/*/*.jsonl).
LAUNCH_US_PER_OP = 25.0


def is_current(rows: list[dict[str, Any]]) -> bool:
    """Rows of the memory-admission policy (2026-12-04 on) carry gpu_memory_wait; older ones ran the 1 GB rule."""
    return any("gpu_memory_wait" in (r.get("phases") or {}) for r in rows)


def row_policy(rows: list[dict[str, Any]], policy: Policy) -> Policy:
    """The hold rules a run's rows ran under (for dividing out their contention)."""
    if is_current(rows):
        return replace(policy, exclusive="loops", alone_above_mb=0.0, shared_holds="command")
    return replace(policy, exclusive="timing", alone_above_mb=1024.0, shared_holds="phase")


class Source:
    """The work the replay knows: jobs from rows (by key, in row order), class medians, compile seconds."""

    def __init__(self, paths: list[Path], policy: Policy, table: dict[str, Any], declare: str) -> None:
        self.table, self.declare, self.capacity = table, declare, policy.capacity or int(0.9 * H200_GIB * GIB)
        self.by_key: dict[str, list[Job]] = {}
        self.spawns: list[float] = []
        self.compiles: list[float] = []
        self.known_pairs: dict[str, int] = {}
        self.call_ms = baseline_ms()
        self.tf32_ms = baseline_ms("tf32")
        finished: list[Job] = []
        for path in paths:
            rows = read_rows(path)
            evals = [r for r in rows if r.get("phase") == "evaluate" and r.get("phases")]
            works = [row_pieces(r, is_current(rows), self.call_ms.get(r["key"], 0.0)) for r in evals]
            footprints = {k: self.footprint(k) for k in {r["key"] for r in evals}}
            compiled = deflate(
                works, [r for r in rows if r.get("phase") == "compile"], row_policy(rows, policy), footprints
            )
            self.compiles += [x.work for x in compiled]
            for work in works:
                key = work.row["key"]
                if work.row.get("pairs"):
                    self.known_pairs.setdefault(key, work.pairs)
                job = job_of(work, problem_class(work.pairs, self.peak(key)), self.declared(key), footprints[key])
                if work.row.get("status") != "timeout":  # a failure part-way replays the part it ran
                    self.by_key.setdefault(key, []).append(job)
                if work.row.get("status") == "ok":
                    finished.append(job)
                    self.spawns.append(job.spawn)
        self.medians = class_medians(finished)
        # Building the reference is host work in proportion to the meta-device count it runs (minutes for the cuDNN
        # RNNs): seconds of it per second the count took on this machine, over the rows where the count is long;
        # a later pair's start is that again after its workers' start-up.
        preps = [(j, next(s.work for s in j.segments if s.role == "prep")) for j in finished]
        counted = [(j, prep, (self.counts(j.key) or {}).get("count_s") or 0.0) for j, prep in preps]
        self.prep_per_count_s = median([prep / c for _, prep, c in counted if c >= 1.0]) or 0.0
        self.pair_start_extra = median(
            [s.work - prep for j, prep in preps for s in j.segments if s.role == "pair_start"]
        )
        self.pair_end_s = median([s.work for j in finished for s in j.segments if s.role == "pair_end"])

    def evidence(self, expected: dict[str, float | None]) -> dict[str, Any]:
        """What the fills rest on: the reference build's host seconds per second of counting, a later pair's start
        beyond it, the GPU time per dispatched operator of the problems the rows timed in one pair and in several
        (sub-ms ones aside: they get two pairs for their length), and the problems that declare the whole device."""
        per_op: dict[str, list[float]] = {"one pair": [], "several pairs": []}
        for key, pairs in self.known_pairs.items():
            ops, ms = (self.counts(key) or {}).get("ops"), expected.get(key)
            if ops and ms and ms >= PAIRS_BELOW_MS:
                per_op["one pair" if pairs == 1 else "several pairs"].append(ms * 1000 / ops)
        return {
            "prep_s_per_count_s": round(self.prep_per_count_s, 3),
            "pair_start_beyond_prep_s": round(self.pair_start_extra, 2),
            "pair_end_s": round(self.pair_end_s, 2),
            "us_per_operator": {k: [round(min(v), 1), round(max(v), 1)] for k, v in per_op.items() if v},
            "whole_device_declarations": sorted(k for k in self.table if self.declared(k) >= self.capacity),
        }

    def counts(self, key: str) -> dict[str, Any] | None:
        got = self.table.get(key)
        return got if isinstance(got, dict) else None

    def peak(self, key: str) -> int | None:
        counts = self.counts(key)
        return int(counts["peak_bytes"]) if counts else None

    def footprint(self, key: str) -> int | None:
        counts = self.counts(key)
        return int(counts["input_bytes"]) + int(counts["output_bytes"]) if counts else None

    def declared(self, key: str) -> int:
        return declared_bytes(self.counts(key), self.capacity, self.declare)

    def pairs(self, key: str, expected_ms: float | None) -> int:
        """A problem's process pairs: as a run measured it; else the launch class's median for a launch-bound one
        (LAUNCH_US_PER_OP), 2 for a sub-ms baseline, 1 otherwise."""
        if key in self.known_pairs:
            return self.known_pairs[key]
        ops = (self.counts(key) or {}).get("ops")
        if expected_ms and ops and expected_ms * 1000 / ops < LAUNCH_US_PER_OP:
            return max(3, round((self.medians.get("launch") or {}).get("pairs", 3.0)))
        return 2 if expected_ms is not None and expected_ms < PAIRS_BELOW_MS else 1

    def job(self, item: dict[str, Any], used: dict[str, int]) -> tuple[Job, bool]:
        """The item's job (a row's if any is left for its key, else its class's medians) and whether from a row."""
        key = item["key"]
        rows = self.by_key.get(key, [])
        compile_s = median(self.compiles) if self.compiles else 90.0  # no compile row: about what bundle-3 took
        if used.get(key, 0) < len(rows):
            job = rows[used.get(key, 0)]
            used[key] = used.get(key, 0) + 1
            from_row = True
        else:
            pairs = self.pairs(key, item.get("expected_ms"))
            cls = problem_class(pairs, self.peak(key))
            medians = self.medians.get(cls) or next(iter(self.medians.values()))
            prep = self.prep_per_count_s * ((self.counts(key) or {}).get("count_s") or 0.0)
            own = {
                "declared": self.declared(key),
                "footprint": self.footprint(key),
                "call_ms": self.call_ms.get(key, 0.0),
                "prep": prep,
                "pair_start": self.pair_start_extra + prep,
            }
            job = median_job(key, cls, medians, pairs, own)
            from_row = False
        if item.get("kind") == "load_inline":
            job = replace(job, compile_s=compile_s)
        start = start_bytes(int((self.counts(key) or {}).get("param_bytes") or 0), cuda=True)
        return replace(job, later_loop_share=self.later_loop_share(key), start_bytes=start), from_row

    def later_loop_share(self, key: str) -> float:
        """A later pair's share of the first pair's timed loop from the sweeps' medians: the first pair times the
        TF32 baseline, the candidate (taken at the baseline's speed) and the FP32 baseline about equally often (their
        calls are sized by time floors and precision alike), a later pair the first two (measured on an H100,
        2026-12-06: L1/68's later pairs 0.70 s of loop against 2.51 s, 0.27 by this rule)."""
        tf32, fp32 = self.tf32_ms.get(key), self.call_ms.get(key)
        return 2 * tf32 / (2 * tf32 + fp32) if tf32 and fp32 else 1.0


def bundle_items(only: list[str], limit: int, repeats: int) -> list[dict[str, Any]]:
    bundle = load_bundle([1, 2, 3])
    if only:
        bundle = [b for b in bundle if b["key"] in only]
    if limit:
        bundle = bundle[:limit]
    return [b for b in bundle for _ in range(repeats)]


def run_items(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items a run had (evaluated, skipped, and the kernels it compiled), in load_bundle's order."""
    want: dict[str, int] = {}
    for r in rows:
        if r.get("phase") in ("evaluate", "skipped"):
            want[r["key"]] = want.get(r["key"], 0) + 1
    for r in rows:
        if r.get("phase") == "compile" and r["key"] not in want:
            want[r["key"]] = 1
    return [b for b in load_bundle([1, 2, 3]) for _ in range(want.get(b["key"], 0))]


def make_jobs(items: list[dict[str, Any]], source: Source) -> tuple[list[Job], int]:
    used: dict[str, int] = {}
    jobs, from_rows = [], 0
    for item in items:
        job, from_row = source.job(item, used)
        jobs.append(job)
        from_rows += from_row
    return jobs, from_rows


def summary(outcomes: list[Outcome], totals: dict[str, float], jobs: list[Job], first: list[int]) -> dict[str, Any]:
    """The prediction: totals, when the first N evaluations had ended, per-class medians."""
    ends = sorted(o.end for o in outcomes if o.end is not None)
    classes: dict[str, Any] = {}
    for cls in sorted({j.cls for j in jobs}):
        mine = [(j, o) for j, o in zip(jobs, outcomes, strict=True) if j.cls == cls and o.end is not None]
        if not mine:
            continue
        classes[cls] = {
            "evaluations": len(mine),
            "median_wall_s": round(median([(o.end or 0.0) - (o.start or 0.0) for _, o in mine]), 1),
            "median_exclusive_s": round(median([o.exclusive for _, o in mine]), 2),
            "median_work_s": round(median([j.spawn + sum(s.work for s in j.segments) for j, _ in mine]), 1),
            "median_memory_wait_s": round(median([o.memory_wait for _, o in mine]), 1),
        }
    return {
        **{k: round(v, 3) if k.endswith(("share", "fraction")) else round(v, 1) for k, v in totals.items()},
        "timeouts": sum(o.status == "timeout" for o in outcomes),
        "sum_memory_wait_s": round(sum(o.memory_wait for o in outcomes), 1),
        "sum_lock_wait_s": round(sum(o.lock_wait for o in outcomes), 1),
        "first_n_ended_s": {n: round(ends[n - 1], 1) for n in first if 0 < n <= len(ends)},
        "classes": classes,
    }


def measured(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The same figures from a run's own rows."""
    evals = [r for r in rows if r.get("phase") == "evaluate"]
    phases = [r.get("phases") or {} for r in evals]
    held = sum(p.get("exclusive_s") or 0.0 for p in phases)
    return {
        "wall_s": round(max(float(r["ended_at_s"]) for r in rows), 1),
        "evaluated": len(evals),
        "exclusive_s": round(held, 1),
        "exclusive_timing_share": round(sum(p.get("exclusive_timing_s") or 0.0 for p in phases) / held, 3)
        if held
        else None,
        "timeouts": sum(r.get("status") == "timeout" for r in evals),
        "sum_memory_wait_s": round(sum(p.get("gpu_memory_wait") or 0.0 for p in phases), 1),
        "sum_lock_wait_s": round(sum(p.get("gpu_wait") or 0.0 for p in phases), 1),
    }


def end_error(rows: list[dict[str, Any]], jobs: list[Job], outcomes: list[Outcome]) -> dict[str, float]:
    """Per evaluation both ran: how far the predicted end is from the measured one (by key, in order)."""
    real: dict[str, list[float]] = {}
    for r in rows:
        if r.get("phase") == "evaluate":
            real.setdefault(r["key"], []).append(float(r["ended_at_s"]))
    errors = []
    for job, out in zip(jobs, outcomes, strict=True):
        if out.end is not None and real.get(job.key):
            errors.append(out.end - real[job.key].pop(0))
    if not errors:
        return {}
    return {"evaluations": len(errors), "median_abs_s": round(median([abs(e) for e in errors]), 1),
            "mean_s": round(sum(errors) / len(errors), 1)}  # fmt: skip


def check_row(name: str, out: dict[str, Any]) -> str:
    """One Markdown row of a check: predicted / measured, figure by figure (replay.md)."""
    got, real, error = out["predicted"], out["measured"], out["end_error"]
    pairs = [f"{got[k]:g} / {real[k]}" for k in ("evaluated", "wall_s", "exclusive_timing_share")]
    pairs += [f"{got[k]:g} / {real[k]}" for k in ("sum_memory_wait_s", "sum_lock_wait_s", "timeouts")]
    ends = f"{error.get('median_abs_s')} s ({error.get('evaluations')})" if error else "-"
    return f"| {name} | {out['jobs']} ({out['jobs_from_rows']} from rows) | " + " | ".join(pairs) + f" | {ends} |"


def build_policy(args: argparse.Namespace) -> Policy:
    return Policy(
        slots=args.slots,
        gpus=args.gpus,
        prestart=not args.no_prestart,
        exclusive=args.exclusive,
        alone_above_mb=args.alone_above_mb,
        capacity=None if args.no_ledger else int(args.capacity_gib * GIB),
        shared_parallelism=args.shared_parallelism,
        cpu_parallelism=args.cpu_parallelism,
        deadline=args.deadline,
        timeout=args.timeout,
        compile_jobs=args.compile_jobs,
        multi_pair_loop_scale=args.multi_pair_loop_scale,
        correctness_scale=args.correctness_scale,
        drain_s=args.drain,
        shared_holds=args.shared_holds,
        placement_pairs=args.placement_pairs,
        placement_beside_gib=args.placement_beside_gib,
        memory_patience_s=args.memory_patience,
        pair_start_memory=args.pair_start_memory,
        first_memory=args.first_memory,
    )


PAIR_ROLES = ("setup", "loop", "loop_other", "recheck")


def with_placement_pairs(job: Job, policy: Policy) -> Job:
    """A one-pair job with policy.placement_pairs - 1 later pairs after its first: each a pair start (its reference
    built again, and the rows' median beyond that) and a copy of the first pair's set-up, loops and re-check, its
    timed loop without the FP32 side (job.later_loop_share). They lie between the markers "placement" and
    "placement_end": the simulation runs them only if the first pair was placed beside others (as the harness
    decides: pair_policy.placed_beside_enough)."""
    if job.pairs != 1 or policy.placement_pairs <= 1:
        return job
    prep = sum(s.work for s in job.segments if s.role == "prep")
    end = max(i for i, s in enumerate(job.segments) if s.role in PAIR_ROLES) + 1
    first = [s for s in job.segments[:end] if s.role in PAIR_ROLES]
    again = [replace(s, work=s.work * job.later_loop_share) if s.role == "loop" else replace(s) for s in first]
    ending = [Segment("pair_end", policy.later_pair_end_s)] if policy.later_pair_end_s else []
    later = [*ending, Segment("pair_start", prep + policy.later_pair_start_s), *again]
    extra = [Segment("placement"), *(later * (policy.placement_pairs - 1)), Segment("placement_end")]
    return replace(job, segments=[*job.segments[:end], *extra, *job.segments[end:]], pairs=policy.placement_pairs)


def scaled(jobs: list[Job], policy: Policy) -> list[Job]:
    """The policy's work scales: the correctness phase, the timed loops of evaluations with several pairs, and the
    placement pairs of those with one; with policy.pair_start_memory "cut", each later pair's start (after its old
    pair's end, `pair_end`) between a cut of the evaluation's declaration and its growth back; with
    policy.first_memory "start", what a start holds admitted before building the reference (its admission after it
    then grows the declaration), "before_build": the admission moved before building the reference."""
    out = []
    for job in jobs:
        several = job.pairs > 1
        job = with_placement_pairs(job, policy)
        segments = []
        for seg in job.segments:
            factor = policy.correctness_scale if seg.role == "correctness" else 1.0
            if seg.role in ("loop", "loop_other") and several:
                factor = policy.multi_pair_loop_scale
            scaled_seg = replace(seg, work=seg.work * factor)
            if seg.role == "pair_start" and policy.pair_start_memory == "cut":
                segments += [Segment("cut"), scaled_seg, Segment("admit")]  # admitted again: grown back
            else:
                segments.append(scaled_seg)
        if policy.first_memory == "start":
            segments.insert(0, Segment("admit_start"))
        elif policy.first_memory == "before_build":
            segments.insert(0, segments.pop(next(i for i, s in enumerate(segments) if s.role == "admit")))
        out.append(replace(job, segments=segments))
    return out


def predict(jobs: list[Job], policy: Policy, source: Source, first: list[int]) -> dict[str, Any]:
    policy = replace(policy, standby_s=median(source.spawns) if source.spawns else policy.standby_s)
    if source.pair_start_extra:
        policy = replace(policy, later_pair_start_s=source.pair_start_extra)
    if source.pair_end_s:
        policy = replace(policy, later_pair_end_s=source.pair_end_s)
    jobs = scaled(jobs, policy)
    outcomes, totals = simulate(jobs, policy)
    return summary(outcomes, totals, jobs, first) | {"_outcomes": outcomes, "_jobs": jobs}
