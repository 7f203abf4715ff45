"""What the timing phase checks besides the clock: the timed outputs re-checked against the clean reference, and
a probe on input sets the kernel has never seen (a cache keyed on inputs would replay the rotating sets).
stdlib only, like the orchestrator.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable
from typing import Any

from evaluator.harness.orchestrator.context import Context, output_ref
from evaluator.harness.orchestrator.declared_memory import FRESH_BATCH_BYTES, FRESH_ROUND_SETS
from evaluator.harness.orchestrator.timing_record import looks_like_replay
from evaluator.harness.protocol import (
    PRECISION_MARGIN,
    VERIFIED_TOLERANCE,
    Distribution,
    miss_kind,
    shorten,
)


def fresh_probe(
    ctx: Context,
    rechecks: dict[str, Any],
    rotating: dict[str, float],
    alone: Callable[[], contextlib.AbstractContextManager[Any]],
) -> int:
    """Time a few calls on input sets the kernel has never seen. The timed loop rotates through a handful of
    sets, so a cache keyed on input contents or addresses (A6, A9) would otherwise replay most timed calls.
    The calls run back to back, as in a timed block, unless the sets are large: then one at a time, so a 6 GB
    set and its output are held only once. Each candidate call is paired with a baseline call on the same new set
    moments before, and replay is judged against what the new sets cost the baseline (timing_record.
    looks_like_replay): the probe runs under the shared hold, where other evaluations' work slows both sides.

    A round that looks like replay is confirmed by a second round on other never-seen sets, run `alone` (the
    exclusive hold: no other evaluation's work beside it), and the faster round counts: a cache is slow on every
    new set, alone or not, while one noisy moment on a shared CPU (seen: an honest kernel's three fresh calls 5x
    slow, its speedup cut to 0.19x) or a GPU shared with five other evaluations (seen on an H100: the reference
    itself slow twice in a row beside them, its speedup cut to 0.51x) is not there alone. `rotating`: each side's
    median over the timed loops ("cand", "tf32"). Returns the number of rounds."""
    count = 3 if ctx.opts.quick else FRESH_ROUND_SETS
    rounds: list[tuple[list[float], list[float]]] = []
    c_med, b_med = rotating.get("cand"), rotating.get("tf32")
    for attempt in range(2):
        with alone() if attempt else contextlib.nullcontext():
            rounds.append(_fresh_round(ctx, rechecks, ctx.timing_sets + attempt * count, count))
        base, fresh = rounds[-1]
        if not fresh or c_med is None or not looks_like_replay(c_med, fresh, b_med, base):
            break
    ctx.fresh_base_times, ctx.fresh_times = min(rounds, key=lambda r: statistics.median(r[1]) if r[1] else float("inf"))
    return len(rounds)


def _fresh_round(ctx: Context, rechecks: dict[str, Any], start: int, count: int) -> tuple[list[float], list[float]]:
    """One round of the fresh-input probe: (the baseline's times, the candidate's times) on `count` new sets."""
    batch = count if (ctx.input_bytes + ctx.output_bytes) * count <= FRESH_BATCH_BYTES else 1
    base_times: list[float] = []
    cand_times: list[float] = []
    for first in range(start, start + count, batch):
        indices = range(first, min(first + batch, start + count))
        seeds = [ctx.seed() for _ in indices]
        made = ctx.ref.fresh_sets(seeds=seeds, start=first)
        base_times += [float(x) for x in made.get("times", [])]
        paths = {str(i): str(ctx.folders.io / f"fresh_out_{i}.pt") for i in indices}
        reply = ctx.cand.time_fresh(seeds=seeds, paths=list(paths.values()), start=first)
        cand_times += [float(x) for x in reply["times"]]
        rechecks.update(recheck_outputs(ctx, "fresh inputs", reply["saved"], paths))
    return base_times, cand_times


def recheck_outputs(
    ctx: Context, tag: str, saved: dict[str, Any], paths: dict[str, str], *, release: bool = True
) -> dict[str, Any]:
    """Re-check timed outputs, then release them (they can be gigabytes each) unless `release` is False (the caller
    re-checks several blocks' outputs and releases them together)."""
    results: dict[str, Any] = {f"input set {i} ({tag})": None for i, desc in saved.items() if desc is None}
    outputs = {i: output_ref(desc, paths[i]) for i, desc in saved.items() if desc is not None and i in paths}
    if outputs:
        reply = ctx.ref.recheck(outputs=outputs, tol=VERIFIED_TOLERANCE, fresh_start=ctx.timing_sets)
        results.update({f"input set {i} ({tag})": r for i, r in reply["results"].items()})
    if release:
        ctx.release_outputs()
    return results


def recheck(ctx: Context, rechecks: dict[str, Any]) -> None:
    """Judge the re-checked timed outputs by the gate's own rule (protocol.miss_kind, docs/protocol.md section 2):
    their figures go into the record's `timed_outputs`, reported as a distribution is. A precision-sized miss is a
    correctness failure there (verdict.py: `incorrect`, as in D1-D4) and no evidence against the kernel; only an
    output that is not a plain tensor, or one beyond anything precision explains, fails timed_output_recheck, the
    anti-cheat check (the kernel passed untimed and not when timed: `rejected`)."""
    missing = [k for k, v in rechecks.items() if v is None]
    checked = {k: v for k, v in rechecks.items() if v is not None}
    kinds = {k: miss_kind(r) for k, r in checked.items()}
    beyond = [f"{k}: {checked[k].get('reason')}" for k, kind in kinds.items() if kind == "beyond"]
    missed = [k for k, kind in kinds.items() if kind == "precision"]
    ctx.record.timed_outputs = as_distribution(checked, missing)
    detail = (
        f"{len(checked)} timed outputs re-checked against the fp32 reference by the gate's rule "
        f"(atol = rtol = {VERIFIED_TOLERANCE:g})"
    )
    if missing:
        detail += f"; {len(missing)} timed outputs were not plain tensors"
    if beyond:
        detail += f"; beyond anything precision explains (over {PRECISION_MARGIN:g}x the allowance): " + "; ".join(
            beyond
        )
    if missed:
        detail += (
            f"; {len(missed)} missed the tolerance by a precision-sized margin (within {PRECISION_MARGIN:g}x): not "
            "evidence of cheating, judged as correctness (timed_outputs)"
        )
    detail = shorten(detail, 700)
    if (beyond or missing) and not ctx.record.correct:
        # Timed only for its standard-protocol figure: timing runs with the randomised parameters the kernel
        # already failed on, so wrong timed outputs say nothing new. Not a verdict either way.
        ctx.record.set_check("timed_output_recheck", None, "not applicable (failed the verified gate); " + detail)
        return
    ctx.record.set_check("timed_output_recheck", not beyond and not missing, detail)


def as_distribution(checked: dict[str, dict[str, Any]], missing: list[str]) -> Distribution:
    """The re-checks as one distribution entry (record.Distribution, name "timed outputs"): how many outputs were
    re-checked (`trials`), the largest errors, and, like a distribution's worst trial, the worst output's ratio and
    count of elements beyond the allowance; `error` names where the worst miss was found."""
    figures = [r for r in checked.values() if r.get("worst_ratio") is not None]
    worst_key = max(
        (k for k, r in checked.items() if not r.get("passed")),
        key=lambda k: (miss_kind(checked[k]) == "beyond", checked[k].get("worst_ratio") or 0.0),
        default=None,
    )
    # assigned field by field, as the dict it once was got its keys: a null one is still written (record_fields)
    entry = Distribution(name="timed outputs", trials=len(checked))
    entry.passed = not missing and worst_key is None
    entry.max_abs_error = max((r["max_abs_error"] for r in figures if r.get("max_abs_error") is not None), default=None)
    entry.max_rel_error = max((r["max_rel_error"] for r in figures if r.get("max_rel_error") is not None), default=None)
    if figures:
        entry.atol = figures[0].get("atol")
        entry.rtol = figures[0].get("rtol")
        entry.elements = figures[0].get("elements")
        entry.worst_ratio = max(float(r["worst_ratio"]) for r in figures)
        entry.beyond_tolerance = max(int(r.get("beyond_tolerance") or 0) for r in figures)
    if worst_key is not None:
        entry.error = shorten(f"{worst_key}: {checked[worst_key].get('reason', '')}", 300)
        entry.precision_sized = not missing and miss_kind(checked[worst_key]) == "precision"
    elif missing:
        entry.error = f"{missing[0]}: not a plain tensor"
        entry.precision_sized = False
    return entry
