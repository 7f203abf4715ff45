"""The correctness gate of an evaluation (docs/protocol.md sections 2 and 3): the standard protocol's trials, parameters
randomised, the verified gate's four distributions D1-D4, one mixed-sign trial and the determinism pair.

Every trial draws a secret seed here; each worker regenerates that trial's inputs from it, the reference keeps its
fp32 output and compares the candidate's published one. stdlib only, like the orchestrator.
"""

from __future__ import annotations

import time
from typing import Any

from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.orchestrator.context import Context, output_ref
from evaluator.harness.orchestrator.verdict import integrity
from evaluator.harness.protocol import (
    DISTRIBUTIONS,
    MIXED_SIGNS,
    STANDARD_TOLERANCE,
    VERIFIED_TOLERANCE,
    miss_kind,
)
from evaluator.harness.record import Distribution, StandardProtocol


def check_correctness(ctx: Context) -> None:
    started = time.monotonic()
    record = ctx.record
    # Standard protocol (what published KernelBench numbers used): default init, D1 only, 5 trials, 1e-2.
    standard = []
    for t in range(ctx.opts.standard_trials):
        res = trial(ctx, f"S{t}", 1.0, STANDARD_TOLERANCE, track_constant=False)
        if "skipped" in res:
            raise HarnessInfraError(f"reference unusable under D1: {res['skipped']}")
        standard.append(bool(res.get("passed")))
    record.standard_correct = all(standard)
    record.environment.standard_protocol = StandardProtocol(
        trials=len(standard), tolerance=STANDARD_TOLERANCE, distribution="D1", params="default init"
    )
    randomise(ctx)
    for dist in record.distributions:
        _distribution(ctx, dist)
    active = [d for d in record.distributions if not d.skipped]
    if not active:  # each distribution's reason (an out-of-memory reference reads as one), not a guess at it
        reasons = "; ".join(f"{d.name}: {d.skip_reason}" for d in record.distributions)
        raise HarnessInfraError(f"the reference gives NaN/Inf or raises under every distribution ({reasons})"[:600])
    mixed = mixed_signs(ctx)
    refilled = refilled_inputs(ctx)
    record.correct = all(d.passed for d in active) and mixed is not False and refilled is not False
    constant = ctx.ref.constant()
    ctx.cand.release(empty_cache=True)
    record.reference_constant = constant["constant"]
    integrity(ctx, "after correctness")
    ctx.phase("correctness", started)


def _distribution(ctx: Context, dist: Distribution) -> None:
    """The verified gate's trials under one distribution (its record entry is filled in place)."""
    factor = dict(DISTRIBUTIONS)[dist.name]
    errors_abs, errors_rel, passed = [], [], True
    for t in range(ctx.opts.verified_trials):
        determinism = dist.name == "D1" and t == 0
        res = trial(ctx, f"{dist.name}_{t}", factor, VERIFIED_TOLERANCE, determinism=determinism)
        if "skipped" in res:
            dist.skipped, dist.skip_reason, dist.passed, dist.trials = True, res["skipped"][:300], None, 0
            break
        dist.trials += 1
        if res.get("max_abs_error") is not None:
            errors_abs.append(res["max_abs_error"])
        if res.get("max_rel_error") is not None:
            errors_rel.append(res["max_rel_error"])
        _how_far(dist, res)
        if not res.get("passed"):
            passed = False
            dist.error = dist.error or res.get("reason", "")[:300]
            # one criterion (protocol.miss_kind): the distribution's miss is precision-sized when every trial's was
            dist.precision_sized = dist.precision_sized is not False and miss_kind(res) == "precision"
    if not dist.skipped:
        dist.passed = passed
        dist.max_abs_error = max(errors_abs, default=None)
        dist.max_rel_error = max(errors_rel, default=None)


def _how_far(dist: Distribution, res: dict[str, Any]) -> None:
    """How far this distribution's worst trial was from passing: the worst element's |err| against its allowance
    atol + rtol*|ref| (a ratio, > 1 where it fails) and the largest count of elements beyond it in one trial."""
    if res.get("atol") is None:
        return  # not compared element by element (not a plain tensor, wrong shape or dtype, integer output)
    # assigned, not passed to a constructor: a null `elements` is still written (record_fields._Part.__setattr__)
    dist.atol, dist.rtol, dist.elements = res["atol"], res["rtol"], res.get("elements")
    if res.get("worst_ratio") is not None:
        dist.worst_ratio = max(dist.worst_ratio or 0.0, float(res["worst_ratio"]))
    if res.get("beyond_tolerance") is not None:
        dist.beyond_tolerance = max(dist.beyond_tolerance or 0, int(res["beyond_tolerance"]))


def trial(
    ctx: Context, key: str, scale: float | str, tol: float, *, track_constant: bool = True, determinism: bool = False
) -> dict[str, Any]:
    """One trial: reference on inputs from a secret seed, the candidate on the same seed's inputs, comparison."""
    seed = ctx.seed(key)  # by label: a reproduction from the master seed meets this trial's inputs again
    made = ctx.ref.make_trial(key=key, seed=seed, scale=scale, track_constant=track_constant)
    if made.get("skipped"):
        return {"skipped": made["skipped"]}
    ctx.output_bytes = max(ctx.output_bytes, int(made["output_bytes"]))
    ctx.input_bytes = max(ctx.input_bytes, int(made.get("input_bytes") or 0))
    poison_bytes = 2 * int(made["output_bytes"]) + (64 << 20)
    out_a, out_b = str(ctx.folders.io / f"{key}_out.pt"), str(ctx.folders.io / f"{key}_out_b.pt")
    run = _candidate_run(ctx, seed, scale, out_a, float("nan"), poison_bytes)
    output: dict[str, Any] | None = None
    again: dict[str, Any] | None | bool = False  # False: no determinism pair in this trial
    if run.get("plain"):
        output = output_ref(run.get("desc"), out_a)
        if determinism:
            second = _candidate_run(ctx, seed, scale, out_b, 0.0, poison_bytes)
            again = output_ref(second.get("desc"), out_b) if second.get("plain") else None
    result = ctx.ref.compare(key=key, output=output, tol=tol, again=again)  # without an output: drops the reference
    ctx.release_outputs()
    if not run.get("plain"):
        result = {"passed": False, "plain": False, "reason": f"output is {run.get('out_type')}, not torch.Tensor"}
    if "determinism" in result:
        pair = result["determinism"]
        detail = (
            f"same inputs twice, allocator poisoned with NaN then 0: max abs difference {pair.get('max_abs_error')}"
        )
        passed = bool(pair.get("passed"))
        ctx.record.set_check("determinism", passed, detail if passed else f"{detail}; {pair.get('reason', '')}")
    if result.get("plain") is False:
        ctx.flags["plain"] = False
        ctx.flag_details.setdefault("plain", result.get("reason", ""))
    if result.get("shape_dtype") is False:
        ctx.flags["shape_dtype"] = False
        ctx.flag_details.setdefault("shape_dtype", result.get("reason", ""))
    return result


def _candidate_run(
    ctx: Context,
    seed: int,
    scale: float | str,
    out_path: str,
    poison: float,
    poison_bytes: int,
    refill_seed: int | None = None,
) -> dict[str, Any]:
    """One forward of the kernel (the allocator poisoned first), its runtime signals noted; with `refill_seed`, a
    forward on `seed`'s inputs first, then the one published on the same tensors refilled with `refill_seed`'s."""
    run = ctx.cand.run(
        seed=seed,
        scale=scale,
        out_path=out_path,
        poison=poison,
        poison_bytes=poison_bytes,
        max_output_bytes=ctx.opts.max_output_mb << 20,
        refill_seed=refill_seed,
    )
    if not run.get("plain"):
        ctx.flags["plain"] = False
        ctx.flag_details.setdefault("plain", f"forward returned {run.get('out_type')}, not a plain torch.Tensor")
    if run.get("alias"):
        ctx.flags["alias"] = True
    if run.get("inputs_unchanged") is False:
        ctx.flags["unchanged"] = False
    return run


def mixed_signs(ctx: Context) -> bool | None:
    """One trial with a random sign per input element (B7: D1-D4 leave each tensor single-signed, so probing a
    few elements could route each distribution to a path that is right only for it)."""
    res = trial(ctx, "M0", MIXED_SIGNS, VERIFIED_TOLERANCE, track_constant=False)
    if "skipped" in res:
        ctx.record.set_check("mixed_sign_inputs", None, "not applicable: " + res["skipped"][:200])
        return None
    passed = bool(res.get("passed"))
    detail = "float inputs positive but for up to 64 random elements negated (one trial, 1e-3): "
    ctx.record.set_check("mixed_sign_inputs", passed, detail + ("passed" if passed else res.get("reason", "")[:300]))
    return passed


def refilled_inputs(ctx: Context) -> bool | None:
    """Same buffers, new contents (C7, address-keyed caches): the kernel is called on one trial's inputs, then on the
    SAME input tensors refilled in place with another trial's values, and that second output is compared with the
    reference for the new values. On CUDA the caching allocator hands a new input the old address all the time, so a
    cache keyed on data_ptr() or id() (or a C++ static map) would return the old contents' result.

    An output that matches the reference for the buffers' previous contents and not the new ones is stale: evidence
    of such a cache (check refilled_inputs fails: `rejected`). Any other miss is a correctness failure like a
    distribution's (`incorrect`, with its figures), never evidence. Returns whether the output was right (None: the
    reference could not be used on these inputs)."""
    seed_before, seed = ctx.seed("R0_before"), ctx.seed("R0")
    made = ctx.ref.make_trial(key="R0_before", seed=seed_before, scale=1.0, track_constant=False)
    if not made.get("skipped"):
        made = ctx.ref.make_trial(key="R0", seed=seed, scale=1.0, track_constant=False)
        if made.get("skipped"):
            ctx.ref.compare(key="R0_before", output=None, tol=VERIFIED_TOLERANCE)  # drops the first reference
    if made.get("skipped"):
        ctx.record.set_check("refilled_inputs", None, "not applicable: " + str(made["skipped"])[:200])
        return None
    out_path = str(ctx.folders.io / "R0_out.pt")
    poison_bytes = 2 * int(made["output_bytes"]) + (64 << 20)
    run = _candidate_run(ctx, seed_before, 1.0, out_path, float("nan"), poison_bytes, refill_seed=seed)
    output = output_ref(run.get("desc"), out_path) if run.get("plain") else None
    result = ctx.ref.compare(key="R0", output=output, tol=VERIFIED_TOLERANCE, previous="R0_before")
    ctx.release_outputs()
    what = "the same input tensors refilled in place with new values (one trial, 1e-3)"
    if result.get("passed"):
        ctx.record.set_check("refilled_inputs", True, f"{what}: the output followed the new values")
        return True
    if result.get("stale"):
        detail = (
            f"{what}: the output is the result for the tensors' previous contents, not their new values: a cache "
            "keyed on addresses (data_ptr(), id()) or buffers, not on what they hold (C7)"
        )
        ctx.record.set_check("refilled_inputs", False, detail)
        return False
    reason = str(result.get("reason", ""))[:300]
    ctx.flag_details["refilled_miss"] = reason
    ctx.record.set_check(
        "refilled_inputs",
        True,
        f"{what}: no stale output (the output missed the reference, but not by returning the previous contents' "
        f"result: judged as correctness): {reason}",
    )
    return False


def randomise(ctx: Context, seed: int | None = None) -> None:
    """New random values for every float parameter and buffer, in the reference and (matched) in ModelNew. With
    `seed`: the same values again (a fresh process pair of the timing phase)."""
    record = ctx.record
    if not ctx.opts.randomise_params:
        record.params_randomised = False
        record.set_check("params_randomised", False, "disabled by option (paper protocol: default init)")
        return
    floats = [
        e for e in ctx.state_entries if e[2].startswith("torch.float") or e[2] in ("torch.half", "torch.bfloat16")
    ]
    # Written by the clean side after kernel code ran, so never into a directory the kernel owns (a planted
    # symlink there would make the reference overwrite any file): a fresh directory of the orchestrator's own.
    params = ctx.folders.handoff / "params.pt"
    ctx.params_seed = ctx.seed("params") if seed is None else seed
    reply = ctx.ref.randomise(entries=floats, seed=ctx.params_seed, out_path=str(params))
    if reply["matched"]:  # the reference randomised all of its float entries, the candidate gets the matched ones
        ctx.cand.load_params(str(params))
    params.unlink(missing_ok=True)
    total, matched, missing = reply["total"], reply["matched"], reply["missing"]
    if total == 0:
        ok, detail = True, "nothing to randomise: the reference has no float parameters or buffers"
    elif not missing:
        ok, detail = True, f"all {total} float parameters/buffers randomised in both models"
    else:
        ok = False
        detail = (
            f"{len(matched)} of {total} randomised; ModelNew has no same-name, same-shape entry for: "
            + ", ".join(missing[:8])
            + (" ..." if len(missing) > 8 else "")
            + " (randomised in the reference all the same: a kernel that hard-codes their default values fails)"
        )
    record.params_randomised = ok
    record.set_check("params_randomised", ok, detail)
