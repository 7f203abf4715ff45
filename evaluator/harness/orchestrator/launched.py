"""What ran: the device kernels of one candidate call and one baseline call, and whether the kernel file's
own CUDA/Triton kernel was among them.

The workers profile one call each with torch.profiler outside the timed calls (profiling.py) and send back
(name, device time) per launch; this module summarises those lists and reads the kernel file for the kernels it
defines. The candidate's list comes from the untrusted process (a kernel can fake or hide it): it only ever flags
(`runtime:no_custom_kernel`), it never decides a verdict. On the CPU nothing is recorded.

stdlib only: the orchestrator builds the record's `launched_kernels` from the workers' replies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluator.harness.sandbox.beneath import read_path

TOP = 25  # kernels listed per side (the rest are summed into "other")

# The file builds or defines device code of its own.
_BUILDS = re.compile(
    r"load_inline|cpp_extension|@triton\.jit|triton\.jit|@jit\b|RawKernel|RawModule|cuda\.compile|__global__"
)
_CUDA_NAMES = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+)?void\s+(\w+)")
_TRITON_NAMES = re.compile(r"@(?:triton\.)?jit\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)")


def summarise(events: Iterable[tuple[str, float]], top: int = TOP) -> dict[str, Any]:
    """Per kernel name: launches, device time and its share of the call's device time, slowest first."""
    by_name: dict[str, list[float]] = {}
    for name, time_us in events:
        entry = by_name.setdefault(str(name), [0, 0.0])
        entry[0] += 1
        entry[1] += max(float(time_us or 0.0), 0.0)
    total = sum(t for _, t in by_name.values())
    rows = sorted(by_name.items(), key=lambda item: (-item[1][1], item[0]))
    kernels = [
        {"name": name[:300], "count": int(n), "time_us": round(t, 3), "share": (t / total) if total else None}
        for name, (n, t) in rows[:top]
    ]
    if len(rows) > top:
        rest = rows[top:]
        t_rest = sum(t for _, (_, t) in rest)
        kernels.append(
            {
                "name": f"({len(rest)} other kernels)",
                "count": int(sum(n for _, (n, _) in rest)),
                "time_us": round(t_rest, 3),
                "share": (t_rest / total) if total else None,
            }
        )
    return {"kernels": kernels, "launches": sum(int(n) for n, _ in by_name.values()), "total_us": round(total, 3)}


def defined_kernels(source: str) -> dict[str, Any]:
    """Whether the kernel file builds device code of its own, and the kernel names it defines (CUDA __global__
    functions, Triton @jit functions)."""
    names = sorted(set(_CUDA_NAMES.findall(source)) | set(_TRITON_NAMES.findall(source)))
    return {"builds": bool(_BUILDS.search(source)), "names": names}


def custom_launched(
    defined: dict[str, Any], candidate: dict[str, Any] | None, baseline: dict[str, Any] | None
) -> bool | None:
    """True: a kernel the file defines ran (or, names unknown, one the baseline never launches); False: the file
    builds device code and none of it ran; None: nothing to say (no device code, or no profile)."""
    if not defined.get("builds") or candidate is None:
        return None
    launched = [k["name"] for k in candidate.get("kernels", []) if not k["name"].startswith("(")]
    names = defined.get("names") or []
    if names:
        return any(n in k for n in names for k in launched)
    if baseline is None:
        return None
    seen = {k["name"] for k in baseline.get("kernels", [])}
    return any(k not in seen for k in launched) or None


def report(source: str, candidate_events: Any, baseline_events: Any) -> dict[str, Any] | None:
    """The record's `launched_kernels`; None where either side sent no profile (the CPU, a profiler failure)."""
    if candidate_events is None and baseline_events is None:
        return None
    candidate = None if candidate_events is None else summarise(_pairs(candidate_events))
    baseline = None if baseline_events is None else summarise(_pairs(baseline_events))
    defined = defined_kernels(source)
    return {
        "candidate": candidate,
        "baseline": baseline,
        "custom_defined": defined["names"] if defined["builds"] else [],
        "builds_device_code": defined["builds"],
        "custom_launched": custom_launched(defined, candidate, baseline),
        "source": "torch.profiler, one call per side outside the timed calls; the candidate's list is reported by "
        "its own (untrusted) process",
    }


def _pairs(events: Any) -> list[tuple[str, float]]:
    """[[name, us], ...] from a worker's reply, malformed entries dropped (the candidate's reply is untrusted)."""
    out: list[tuple[str, float]] = []
    if not isinstance(events, list):
        return out
    for item in events[:100_000]:
        if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[1], int | float):
            out.append((str(item[0]), float(item[1])))
    return out


TRACE_MAX_BYTES = 256 << 20


def copy_trace(source: Path, dest: Path) -> str | None:
    """Copy a worker's Chrome trace out of its folder; the copy's name, or None when there is none. The folder may be
    the kernel's (its io/): the file is read beneath its grandparent, a folder of ours, from descriptors that follow
    no link and read no FIFO (beneath.py), at most TRACE_MAX_BYTES."""
    try:
        data = read_path(source.parent.parent, f"{source.parent.name}/{source.name}", max_bytes=TRACE_MAX_BYTES)
    except OSError:
        return None
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        return dest.name
    except OSError:
        return None
