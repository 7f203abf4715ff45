"""What a worker does to and learns from its device: first-use costs, the TF32 precision flags, synchronising,
device facts for the record, and poisoning the allocator. torch only; never imports candidate code.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import torch

from evaluator.harness.workers.memory import raised_by, reserved_peak_bytes


def warm_up(msg: dict[str, Any]) -> dict[str, Any]:
    """Pay first-use costs before any problem or kernel is known: the CUDA context (on a "cuda" device: what it is,
    for the orchestrator's memory ledger) and, with `meta`, torch's meta-device registrations (about 0.75 s on first
    use, for the footprint)."""
    reply: dict[str, Any] = {}
    if str(msg["device"]).startswith("cuda"):
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        props = torch.cuda.get_device_properties(0)
        reply = {"uuid": str(getattr(props, "uuid", "")) or None, "total_memory_bytes": int(props.total_memory)}
    if msg.get("meta"):
        with torch.device("meta"):
            torch.nn.Linear(2, 2)(torch.empty(1, 2))
    return reply


def set_precision(tf32: bool) -> None:
    """The TF32 flags (the verified baseline's, for timing) or full FP32 (the reference's, for correctness): cuBLAS
    and cuDNN flags and the float32 matmul precision ("high" / "highest") together, so no flag contradicts another."""
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")


def precision_flags() -> dict[str, Any]:
    """The flags as they are set in this process now (read back, not as asked for)."""
    return {
        "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": str(torch.get_float32_matmul_precision()),
    }


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def now_ns() -> int:
    return time.perf_counter_ns()


def device_memory(msg: dict[str, Any]) -> dict[str, Any]:
    """The device's free and total memory as the driver counts them (every process on the device, not this one's
    allocator alone), and what this process's allocator holds now and at its most: read by the reference worker at
    each process pair's end (the record's `gpu_hold` beside the declaration) and after the kernel ran out of memory
    (was the device full?). Empty before this process has a CUDA context."""
    if not torch.cuda.is_initialized():
        return {}
    free, total = torch.cuda.mem_get_info()
    reserved = {"reserved_bytes": int(torch.cuda.memory_reserved()), "reserved_peak_bytes": reserved_peak_bytes()}
    return {"free_bytes": int(free), "total_bytes": int(total), **reserved, "reserved_peak_by_command": raised_by()}


def device_info(device: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": sys.version.split()[0],
        "device": device,
        "device_name": "cpu",
        "arch": "cpu",
        "cpu_threads": torch.get_num_threads(),
    }
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        info.update(
            device_name=props.name,
            uuid=str(getattr(props, "uuid", "")) or None,
            arch=f"sm_{props.major}{props.minor}",
            l2_cache_bytes=int(getattr(props, "L2_cache_size", 0)),
            total_memory_bytes=int(props.total_memory),
            cudnn=torch.backends.cudnn.version(),
            driver=_driver_version(),
        )
    return info


def _driver_version() -> str | None:
    try:
        return str(torch.cuda.driver_version()) if hasattr(torch.cuda, "driver_version") else None
    except Exception:
        return None


def poison_allocator(device: str, value: float, nbytes: int) -> None:
    """Fill about `nbytes` of soon-to-be-reused memory with `value`, then free it (B1/B2 stale-memory reuse).

    On CUDA the caching allocator hands these blocks to the next allocations. On CPU (malloc) this is best effort.
    """
    if nbytes <= 0:
        return
    if device.startswith("cuda"):
        free, _ = torch.cuda.mem_get_info()
        nbytes = int(min(nbytes, free * 0.5))
        chunks = [torch.full((max(nbytes // 4, 1),), value, dtype=torch.float32, device=device)]
    else:
        size = 1 << 18  # 1 MiB chunks stay below glibc's mmap threshold once it has grown; best effort
        chunks = [torch.full((size // 4,), value, dtype=torch.float32) for _ in range(min(nbytes // size + 1, 256))]
    sync(device)
    del chunks
