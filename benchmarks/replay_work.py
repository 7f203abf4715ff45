"""From a GPU run's rows (bundle_gpu.py's JSON lines) to the uncontended work of each evaluation, for the replay
(replay_sim.py). Standard library only.

A row's `phases` are seconds on the evaluation's clock, and they include what the run's neighbours cost it: the
lock waits (`gpu_wait`: inside the shared phases, one worker command at a time, and before each timed loop, where the
timing phase's sub-phases leave a gap; `gpu_memory_wait` before correctness), and the slowdown of sharing the GPU and
the host with the others. The waits are taken out (the simulation makes its own); the slowdown is divided out with
the run's own timeline: each row's phases are laid end to end from its start (`ended_at_s` - `wall_s`), standby
harnesses from the start of the slot's previous evaluation, compile jobs over their rows, and a phase that ran while
n others of its kind (host work, or shared GPU work) ran at min(1, parallelism / n) of its speed on average did that
fraction of its seconds in uncontended work. The parallelisms are the simulation's own (replay_bundle.py calibrates).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.replay_model import CPU_ROLES, Job, Policy, Segment, shared_rate, stretch

# Calls of the problem's forward (both sides together) each shared phase runs, roughly, for its GPU share (the rest
# is the host's: Python, inputs compared, the profiler): correctness 5 standard and 8 verified trials, a mixed-sign
# one and the determinism pair; the first pair's set-up warms up three sides and sizes blocks; a re-check and the
# fresh probe a few forwards; profiling one call per side.
CALLS = {"correctness": 30.0, "setup": 25.0, "recheck": 6.0, "checks": 10.0, "profile": 2.0}
TOP_PHASES = ("start", "compile", "correctness", "timing", "profile", "shutdown", "gpu_memory_wait")
NUMBER = (int, float)


@dataclass
class Piece:
    role: str
    seconds: float  # as measured
    wait: float = 0.0  # of it, queued for the GPU lock
    start: float = 0.0  # on the run's clock
    work: float = 0.0  # the uncontended estimate
    gpu_s: float = 0.0  # of it, the GPU's (CALLS x one forward)


@dataclass
class RowWork:
    row: dict[str, Any]
    pieces: list[Piece]
    standby: Piece | None = None  # the prestarted workers, started with the slot's previous evaluation
    pairs: int = 1
    call_ms: float = 0.0  # one forward on the GPU (the FP32 baseline's median)


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _num(phases: dict[str, Any], name: str) -> float:
    value = phases.get(name)
    return float(value) if isinstance(value, NUMBER) and not isinstance(value, bool) else 0.0


def row_pieces(row: dict[str, Any], current_policy: bool = True, call_ms: float = 0.0) -> RowWork:
    """The row's phases in the order they ran, waits outside phases as pieces of their own ("wait"), and the lock
    waits inside the shared phases spread over them in proportion. `current_policy`: the row ran with the exclusive
    hold around timed loops only (its `exclusive_s` beyond the loops is then taking and giving back the hold)."""
    p = row.get("phases") or {}
    n = max(1, len(row.get("pairs") or []), *(int(k.rsplit("_", 1)[1]) for k in p if k.startswith("timing_loop_pair")))
    suffix = ["" if i == 1 else f"_pair_{i}" for i in range(1, n + 1)]
    loops = [_num(p, f"timing_loop{s}") for s in suffix]
    held = _num(p, "exclusive_s")
    other = 0.0
    if current_policy and held and sum(loops) > held:  # loops that counted their pauses: the hold is the figure
        loops = [x * held / sum(loops) for x in loops]
    elif current_policy:
        other = max(held - sum(loops), 0.0)
    named = sum(_num(p, f"{k}{s}") for s in suffix for k in ("timing_setup", "timing_loop", "timing_recheck"))
    named += sum(_num(p, f"pair_{i}_start") for i in range(2, n + 1)) + _num(p, "timing_checks")
    # the timing phase beyond its named parts: queueing for the exclusive hold, and the hold beyond the loops
    gap = max(_num(p, "timing") - named - other, 0.0) if p.get("timing") is not None else 0.0
    unnamed = max(_num(p, "total") - sum(_num(p, k) for k in TOP_PHASES), 0.0)
    lock = _num(p, "gpu_wait")
    before_loops = min(lock, gap)
    before_correctness = min(lock - before_loops, unnamed)
    inside = lock - before_loops - before_correctness
    workers = _num(p, "workers")
    # each later pair's start: its memory waited for after it, to grow its declaration back (cut for the start since
    # 2026-12-06), and the old pair's end at its beginning (the declaration held whole; timed apart since that evening)
    starts = {int(s.get("pair") or 0): s for s in row.get("pair_starts") or []}
    regrow = {pair: _num(s, "memory_wait_s") for pair, s in starts.items()}
    pieces = [Piece("spawn", workers)] if workers else []
    # since 2026-12-06 the start's memory admission (gpu_memory_wait_start) is inside "start", before the workers'
    # CUDA contexts: taken out here and replayed with the other memory waits, before correctness
    start_wait = _num(p, "gpu_memory_wait_start")
    pieces += [Piece("prep", max(_num(p, "start") - workers - start_wait, 0.0) + _num(p, "compile"))]
    pieces += [
        Piece("wait", max(_num(p, "gpu_memory_wait") - sum(regrow.values()), 0.0) + before_correctness),
        Piece("correctness", _num(p, "correctness")),
    ]
    for i, s in enumerate(suffix):
        if i:
            start = _num(p, f"pair_{i + 1}_start")
            end = min(_num(starts.get(i + 1, {}), "ended_s"), start)
            if end:
                pieces.append(Piece("pair_end", end))
            pieces.append(Piece("pair_start", start - end))
            pieces.append(Piece("wait", regrow.get(i + 1, 0.0)))
        pieces += [Piece("setup", _num(p, f"timing_setup{s}")), Piece("wait", before_loops / n)]
        pieces += [
            Piece("loop", loops[i]),
            Piece("loop_other", other / n),
            Piece("recheck", _num(p, f"timing_recheck{s}")),
        ]
    pieces += [Piece(r, _num(p, k)) for r, k in (("checks", "timing_checks"), ("profile", "profile"))]
    pieces.append(Piece("shutdown", _num(p, "shutdown")))
    # The waits inside the shared phases, in proportion (at most 95 % of a phase); what they cannot hold was waited
    # for in the later pairs' starts (before 2026-12-04 a pair's start ended by taking the exclusive hold again).
    for roles in (("correctness", "setup", "recheck", "checks", "profile"), ("pair_start",)):
        holders = [x for x in pieces if x.role in roles]
        total = sum(x.seconds for x in holders)
        for x in holders:
            x.wait = min(inside * x.seconds / total, 0.95 * x.seconds) if total else 0.0
        inside -= sum(x.wait for x in holders)
    call_ms = float(row.get("fp32_ms") or row.get("tf32_ms") or call_ms)
    for x in pieces:
        x.gpu_s = CALLS.get(x.role, 0.0) * call_ms / 1000
    standby = Piece("spawn", _num(p, "standby_workers")) if p.get("standby_workers") is not None else None
    return RowWork(row, pieces, standby, n, call_ms)


def _sweep(pieces: list[Piece], rate: Any) -> dict[int, float]:
    """Each piece's mean speed over its interval, where `rate(running)` gives the speed of each of the pieces running
    at one moment (a list in their order); exact between the moments a piece starts or ends."""
    timed = [x for x in pieces if x.seconds > 0]
    edges = sorted({x.start for x in timed} | {x.start + x.seconds for x in timed})
    starts = sorted(timed, key=lambda x: x.start)
    done = {id(x): 0.0 for x in timed}
    running: list[Piece] = []
    i = 0
    for a, b in zip(edges, edges[1:], strict=False):
        while i < len(starts) and starts[i].start <= a:
            running.append(starts[i])
            i += 1
        running = [x for x in running if x.start + x.seconds > a]
        for x, speed in zip(running, rate(running) if running else [], strict=True):
            done[id(x)] += speed * (b - a)
    return {id(x): done[id(x)] / x.seconds for x in timed}


def timeline(works: list[RowWork], compiles: list[dict[str, Any]]) -> list[tuple[Piece, str]]:
    """Place every piece on the run's clock; returns (piece, "row" or "standby" or "compile") for each."""
    placed: list[tuple[Piece, str]] = []
    slots: list[float] = []  # each slot's current evaluation's start, and its end
    ends: list[float] = []
    for work in sorted(works, key=lambda w: float(w.row["ended_at_s"]) - float(w.row["wall_s"])):
        t0 = float(work.row["ended_at_s"]) - float(work.row["wall_s"])
        t = t0
        for piece in work.pieces:
            piece.start = t
            t += piece.seconds
            placed.append((piece, "row"))
        # the slot it ran in: the one whose evaluation ended as it started (first evaluations: a new slot)
        free = [i for i, end in enumerate(ends) if end <= t0 + 0.5]
        slot = min(free, key=lambda i: abs(ends[i] - t0)) if free and t0 > 1.0 else len(slots)
        if slot == len(slots):
            slots.append(t0)
            ends.append(0.0)
        if work.standby is not None:
            work.standby.start = slots[slot]
            placed.append((work.standby, "standby"))
        slots[slot], ends[slot] = t0, float(work.row["ended_at_s"])
    for row in compiles:
        piece = Piece("compile", float(row["wall_s"]), start=float(row["ended_at_s"]) - float(row["wall_s"]))
        placed.append((piece, "compile"))
    return placed


def deflate(
    works: list[RowWork], compiles: list[dict[str, Any]], policy: Policy, footprints: dict[str, int | None]
) -> list[Piece]:
    """Each piece's uncontended work (Piece.work) under `policy`'s parallelisms and hold modes (the policy the run
    ran under; `footprints` by key, for the rule that ran big problems alone). Returns the compile jobs' pieces.
    The GPU shares of shared phases come from their work, so the division is done twice."""
    placed = timeline(works, compiles)
    modes: dict[int, str] = {}
    for work in works:
        job = Job(work.row["key"], "", 0, footprints.get(work.row["key"]), 0.0, [])
        modes.update({id(x): policy.mode(job, x.role) for x in work.pieces})
    cpu = [x for x, _ in placed if x.role in CPU_ROLES]
    shared = [x for x, kind in placed if kind == "row" and modes.get(id(x)) == "shared"]
    host = _sweep(cpu, lambda running: [min(1.0, policy.cpu_parallelism / max(len(running), 1))] * len(running))
    for x, _ in placed:
        x.work = 0.0 if x.role == "wait" else x.seconds - x.wait
        if x.role in CPU_ROLES:
            x.work *= host.get(id(x), 1.0)
    for _ in range(2):

        def gpu_rates(running: list[Piece]) -> list[float]:
            shares = [min(1.0, x.gpu_s / x.work) if x.work > 0 else 0.0 for x in running]
            factor = stretch(shares, policy.shared_parallelism)
            return [shared_rate(g, factor) for g in shares]

        speeds = _sweep(shared, gpu_rates)
        for x in shared:
            x.work = (x.seconds - x.wait) * speeds.get(id(x), 1.0)
    if policy.shared_holds == "phase":
        for work in works:
            _hold_in_pair_starts(work, [x for x in work.pieces if modes.get(id(x)) == "exclusive"])
    return [x for x, kind in placed if kind == "compile"]


def _hold_in_pair_starts(work: RowWork, exclusive: list[Piece]) -> None:
    """Before 2026-12-04 a later pair's start ended by taking the exclusive hold back and setting the pair up under
    it: `exclusive_s` beyond the phases the rule held alone was spent inside the pair starts. That much of their
    work moves to the evaluation's exclusive time (its loop_other pieces)."""
    starts = [x for x in work.pieces if x.role == "pair_start"]
    others = [x for x in work.pieces if x.role == "loop_other"]
    held = _num(work.row.get("phases") or {}, "exclusive_s")
    extra = max(held - sum(x.work for x in exclusive if x.role != "loop_other"), 0.0)
    moved = min(extra, 0.9 * sum(x.work for x in starts))
    if not (starts and others and moved > 0):
        return
    total = sum(x.work for x in starts)
    for x in starts:
        x.work -= moved * x.work / total
    for x in others:
        x.work = moved / len(others)


def job_of(work: RowWork, cls: str, declared: int, footprint: int | None) -> Job:
    """The simulation's job for one row (its waits left out: the simulation makes its own)."""
    spawn = next((x.work for x in work.pieces if x.role == "spawn"), None)
    if spawn is None:
        spawn = work.standby.work if work.standby is not None else 0.0
    segments = [Segment(x.role, x.work, x.gpu_s) for x in work.pieces if x.role not in ("spawn", "wait")]
    segments.insert(1, Segment("admit"))  # after building the reference, before correctness
    segments.append(Segment("release"))  # the workers gone
    return Job(work.row["key"], cls, declared, footprint, spawn, segments, pairs=work.pairs)


def problem_class(pairs: int, peak_bytes: int | None) -> str:
    """The replay's classes: "launch" (several process pairs: launch-bound or sub-ms), else by the problem's
    meta-device peak: "big" (over 1 GiB, or unknown), "small"."""
    if pairs > 1:
        return "launch"
    return "big" if peak_bytes is None or peak_bytes > 2**30 else "small"


def median(values: list[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def class_medians(jobs: list[Job]) -> dict[str, dict[str, float]]:
    """Per class, the median work of each role: start-up, and per role the median over the class's evaluations of
    its first pair's (setup, loop, recheck) and of a later pair's (pair_start, setup, loop, recheck)."""
    out: dict[str, dict[str, float]] = {}
    for cls in sorted({j.cls for j in jobs}):
        group = [j for j in jobs if j.cls == cls]
        figures: dict[str, list[float]] = {"spawn": [j.spawn for j in group], "pairs": [float(j.pairs) for j in group]}
        for job in group:
            pair = 1
            for seg in job.segments:
                if seg.role == "pair_start":
                    pair += 1
                name = (
                    seg.role
                    if pair == 1 or seg.role not in ("setup", "loop", "loop_other", "recheck")
                    else f"{seg.role}_later"
                )
                figures.setdefault(name, []).append(seg.work)
        out[cls] = {name: median(values) for name, values in figures.items()}
        out[cls]["evaluations"] = float(len(group))
    return out


def median_job(key: str, cls: str, medians: dict[str, float], pairs: int, own: dict[str, Any]) -> Job:
    """A job for a problem the run did not reach: its class's median work, and of its own (`own`): its declared
    memory and footprint, its forward's GPU time (`call_ms`, for the GPU shares), and the host work of building
    its reference (`prep`), which a later pair's start repeats after its workers' start-up (`pair_start`)."""
    m = {**medians, "prep": own["prep"], "pair_start": own["pair_start"]}.get

    def seg(role: str, name: str = "") -> Segment:
        work = m(name or role, m(role, 0.0))
        return Segment(role, work, min(CALLS.get(role, 0.0) * own["call_ms"] / 1000, work))

    segments = [seg("prep"), Segment("admit"), seg("correctness")]
    for i in range(pairs):
        if i:
            segments += [seg("pair_end")] if m("pair_end", 0.0) else []
            segments.append(seg("pair_start"))
        segments += [seg(r, f"{r}_later" if i else r) for r in ("setup", "loop", "loop_other", "recheck")]
    segments += [seg("checks"), seg("profile"), seg("shutdown"), Segment("release")]
    return Job(key, cls, own["declared"], own["footprint"], m("spawn", 0.0), segments, pairs=pairs)
