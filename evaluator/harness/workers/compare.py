"""Output comparison, run only in clean processes: |out - ref| <= atol + rtol * |ref|, strict about NaN/Inf."""

from __future__ import annotations

from typing import Any

import torch

from evaluator.harness.protocol import COMPARE_CHUNK_ELEMENTS as CHUNK
from evaluator.harness.protocol import PRECISION_MARGIN, precision_sized, tolerance_for


def compare_outputs(out: Any, ref: torch.Tensor, tol: float) -> dict[str, Any]:
    """Compare a candidate output with the reference; `out` was loaded with weights_only=True.

    `tol` is the gate's atol = rtol for fp32; a half-precision reference raises it (protocol.tolerance_for).
    NaN/Inf in the output pass only where the reference holds the same value at the same place. Besides the
    verdict: how far the output was from passing, `worst_ratio` (the largest |out - ref| / (atol + rtol * |ref|),
    above 1 where it fails), `beyond_tolerance` (elements over it, of `elements`) and `nonfinite_mismatch` (NaN/Inf
    where the reference has none). A miss within protocol.PRECISION_MARGIN says so in its reason.
    """
    result: dict[str, Any] = {"passed": False, "max_abs_error": None, "max_rel_error": None, "reason": ""}
    if type(out) is not torch.Tensor:
        result["reason"] = f"output is {type(out).__name__}, not a plain torch.Tensor"
        result["plain"] = False
        return result
    result["plain"] = True
    if tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
        result["shape_dtype"] = False
        result["reason"] = (
            f"output {tuple(out.shape)} {str(out.dtype).replace('torch.', '')} != "
            f"reference {tuple(ref.shape)} {str(ref.dtype).replace('torch.', '')}"
        )
        return result
    result["shape_dtype"] = True
    out = out.to(ref.device)
    if not (ref.is_floating_point() or ref.is_complex()):
        equal = bool(torch.equal(out, ref))
        result.update(passed=equal, max_abs_error=0.0 if equal else None, max_rel_error=0.0 if equal else None)
        if not equal:
            diff = (out.double() - ref.double()).abs().max().item() if out.numel() else 0.0
            result.update(max_abs_error=diff, reason=f"integer output differs (max abs {diff:.3g})")
        return result
    tol = tolerance_for(str(ref.dtype), tol)
    result.update(atol=tol, rtol=tol, elements=int(out.numel()))
    if out.numel() == 0:
        result.update(passed=True, max_abs_error=0.0, max_rel_error=0.0, worst_ratio=0.0, beyond_tolerance=0)
        return result
    work = torch.float64 if ref.dtype == torch.float64 else torch.float32
    bad_special = over = 0
    max_abs = max_rel = worst = 0.0
    flat_o, flat_r = out.reshape(-1), ref.reshape(-1)
    for start in range(0, flat_r.numel(), CHUNK):  # chunks bound the temporaries for multi-GB outputs
        o = flat_o[start : start + CHUNK].to(work)
        r = flat_r[start : start + CHUNK].to(work)
        finite = torch.isfinite(o) & torch.isfinite(r)
        same_special = (o == r) | (torch.isnan(o) & torch.isnan(r))
        bad_special += int((~finite & ~same_special).sum().item())
        zero = torch.zeros((), dtype=work, device=o.device)
        diff = torch.where(finite, (o - r).abs(), zero)
        allowed = tol + tol * r.abs()
        over += int(((diff > allowed) & finite).sum().item())
        worst = max(worst, float((diff / allowed).max().item()))
        max_abs = max(max_abs, float(diff.max().item()))
        nonzero = finite & (r != 0)
        rel = torch.where(nonzero, diff / r.abs().clamp_min(torch.finfo(work).tiny), zero)
        max_rel = max(max_rel, float(rel.max().item()))
        del o, r, diff, rel, finite, same_special, nonzero, allowed
    result.update(
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        worst_ratio=worst,
        beyond_tolerance=over + bad_special,
        nonfinite_mismatch=bad_special,
        passed=(bad_special == 0 and over == 0),
    )
    if bad_special:
        result["reason"] = f"{bad_special} NaN/Inf values where the reference has none"
    elif over:
        result["reason"] = (
            f"{over} of {out.numel()} elements beyond tolerance (max abs error {max_abs:.3g}, worst element "
            f"{worst:.3g}x its allowance atol + rtol*|ref| at atol = rtol = {tol:g})"
        )
        if precision_sized(result):
            result["reason"] += f": a precision-sized miss (within {PRECISION_MARGIN:g}x)"
    return result


def under_tf32(
    result: dict[str, Any], out: torch.Tensor, ref: torch.Tensor, tf32_ref: torch.Tensor, tol: float
) -> dict[str, Any]:
    """A timed output that missed the fp32 reference (`result`), judged again knowing the timed calls ran under the
    TF32 flags the harness set, not flags the kernel chose. It passes when it matches the TF32 baseline's output at
    the gate's tolerance, or when its worst element is no further from the fp32 reference (as a multiple of its
    allowance) than the TF32 baseline's own worst element is: the precision those flags cost PyTorch itself (two
    TF32 convolutions by different algorithms each miss 1e-3 in a few elements of millions, and each other). Else
    the fp32 comparison stands, with the baseline's own figure beside it (`tf32_baseline_ratio`)."""
    tf32 = compare_outputs(out, tf32_ref, tol)
    if tf32.get("passed"):
        return {**tf32, "reference": "tf32", "fp32_reason": result.get("reason", "")}
    spread = compare_outputs(tf32_ref, ref, tol)
    own = None if spread.get("nonfinite_mismatch") else spread.get("worst_ratio")
    worst = result.get("worst_ratio")
    if isinstance(own, float) and isinstance(worst, float) and not result.get("nonfinite_mismatch") and worst <= own:
        return {
            **result,
            "passed": True,
            "reference": "tf32 baseline's spread",
            "fp32_reason": result.get("reason", ""),
            "reason": "",
            "tf32_baseline_ratio": own,
        }
    return {**result, "tf32_baseline_ratio": own}


def nonfinite(ref: torch.Tensor) -> bool:
    return bool(ref.is_floating_point() and not torch.isfinite(ref).all().item())
