"""What an evaluation declares of its device's memory for its two workers (gpu_holds.py admits it beside the
others' declarations, gpu_memory.MemoryLedger): from the meta device's counts before any worker touches the device,
raised by what a reference worker of the same problem was seen to hold (seen_peaks.py). stdlib only, like the
orchestrator."""

from __future__ import annotations

# What a worker holds on a CUDA device before any tensor of the problem: its context, cuBLAS/cuDNN workspaces and
# the caching allocator's slack (measured: 0.5-0.7 GB per process on the H200).
CUDA_WORKER_BYTES = 768 << 20
# Library workspaces (cuDNN, cuBLAS) and the caching allocator's rounding beyond the tensors one forward holds at
# its peak (measured on the H200: a 3D transposed convolution's 1.7 GB of tensors peaked at 2.9 GB).
PEAK_MARGIN = 1.25
# The most a seen peak raises the estimate (seen_peaks.py): measured up to 2.4x on an H100; a reference worker made
# to hold more (by the outputs a kernel hands it) cannot make its problem's later evaluations run alone.
SEEN_CAP = 4
UNCAPPED = 1 << 62  # a capacity no estimate reaches: reservation_bytes' figure before the device caps it


def reservation_bytes(
    *,
    footprint: int | None,
    peak_bytes: int,
    input_sets: int,
    capacity: int,
    cuda: bool,
    declared_mb: float = 0.0,
    seen_bytes: int = 0,
) -> int:
    """The memory an evaluation declares for its two workers. Each holds its CUDA context (on a GPU), one forward's
    peak (inputs, state and every intermediate tensor alive at once: flops.PeakBytes on the meta device) with a
    margin, and input_sets + 1 more input sets with their outputs (the rotating timing sets and a fresh one).
    Unknown sizes declare the whole device (the evaluation then runs beside nothing else). `declared_mb` (the
    gpu_memory_reserve_mb option) replaces the estimate. `seen_bytes`, what a reference worker of the same problem
    was seen to hold of the device at its most (seen_peaks.py), is the least a worker declares beside its context."""
    if declared_mb > 0:
        return min(int(declared_mb * 2**20), capacity)
    if footprint is None:
        return capacity
    peak = max(peak_bytes, footprint)
    estimate = PEAK_MARGIN * peak + (input_sets + 1) * footprint
    per_worker = (CUDA_WORKER_BYTES if cuda else 0) + max(estimate, min(seen_bytes, SEEN_CAP * estimate))
    return min(int(2 * per_worker), capacity)


def start_bytes(param_bytes: int, cuda: bool) -> int:
    """What a process pair holds on the device while it starts: each worker its CUDA context and the model's
    parameters and buffers (flops.count: param_bytes) with the peak margin; inputs come after the start."""
    return int(2 * ((CUDA_WORKER_BYTES if cuda else 0) + PEAK_MARGIN * param_bytes))
