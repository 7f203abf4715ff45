"""What an evaluation declares of its device's memory for its two workers (gpu_holds.py admits it beside the
others' declarations, gpu_memory.MemoryLedger): from the meta device's counts before any worker touches the device,
raised by what a reference worker of the same problem was seen to hold (seen_peaks.py). stdlib only, like the
orchestrator."""

from __future__ import annotations

from evaluator.harness.protocol import COMPARE_CHUNK_ELEMENTS

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
# The fresh-input probe (timed_outputs.fresh_probe): sets per round, made and re-checked together while they fit in
# FRESH_BATCH_BYTES, else one at a time.
FRESH_ROUND_SETS = 5
FRESH_BATCH_BYTES = 1 << 30
# The L2 flush buffer a CUDA worker allocates for timing (workers/l2.py: twice the L2, at least 256 MiB).
FLUSH_BYTES = 256 << 20
# float32 temporaries a comparison holds at once, in chunks of protocol.COMPARE_CHUNK_ELEMENTS (workers/compare.py)
COMPARE_TEMPORARIES = 5


def reservation_bytes(
    *,
    footprint: int | None,
    peak_bytes: int,
    input_sets: int,
    capacity: int,
    cuda: bool,
    output_bytes: int,
    param_bytes: int,
    declared_mb: float = 0.0,
    seen_bytes: int = 0,
) -> int:
    """The memory an evaluation declares for its two workers: each its CUDA context and what its reference worker's
    caching allocator holds at its most (worker_bytes). Unknown sizes declare the whole device (the evaluation
    then runs beside nothing else). `declared_mb` (the gpu_memory_reserve_mb option) replaces the estimate.
    `seen_bytes`, what a reference worker of the same problem was seen to hold of the device at its most
    (seen_peaks.py), is the least a worker declares beside its context."""
    if declared_mb > 0:
        return min(int(declared_mb * 2**20), capacity)
    if footprint is None:
        return capacity
    estimate = worker_bytes(footprint, peak_bytes, input_sets, cuda, output_bytes, param_bytes)
    per_worker = (CUDA_WORKER_BYTES if cuda else 0) + max(estimate, min(seen_bytes, SEEN_CAP * estimate))
    return min(int(2 * per_worker), capacity)


def worker_bytes(
    footprint: int, peak_bytes: int, input_sets: int, cuda: bool, output_bytes: int, param_bytes: int
) -> int:
    """What a reference worker holds of the device beside its context at the step where it holds most, from the
    meta device's counts (one set's inputs and output: `footprint`; one forward's peak; the parameters). Each step
    was measured on an H100 (2026-12-07: the allocator's reserved peak per command, 35 problems; see
    benchmarks/results/declared-vs-reserved-h100-2026-12-07.md); the largest of:
    - timing set-up: the flush buffer, the rotating sets with their references, and warm-ups in TF32 and in FP32,
      whose different algorithms each leave a forward's peak cached (up to 1.7x the peak, 3x for small convolutions);
    - re-checks of timed outputs: the rotating sets and references, the fresh sets' fp32 and TF32 references (five
      at once when small), the output received and the comparison's temporaries, with the margin (up to 13x the
      output for output-heavy problems, where the estimate before this counted 4x the footprint);
    - parameters given new values: a second copy of the parameters beside a forward (L3 networks: up to 2.9x the
      parameters).
    Beyond the tensors of one forward (`peak_bytes`) it counts only what the steps add, so a problem of small
    output and a large intermediate declares its intermediate, not its footprint."""
    peak = max(peak_bytes, footprint)
    forward = PEAK_MARGIN * peak
    rotating = input_sets * footprint
    timing = (FLUSH_BYTES if cuda else 0) + forward + peak + rotating
    fresh = FRESH_ROUND_SETS if FRESH_ROUND_SETS * footprint <= FRESH_BATCH_BYTES else 1
    chunk = COMPARE_CHUNK_ELEMENTS * 4
    recheck = PEAK_MARGIN * (rotating + (2 * fresh + 1) * output_bytes + COMPARE_TEMPORARIES * min(output_bytes, chunk))
    randomise = forward + 2 * param_bytes
    return int(max(timing, recheck, randomise))


def start_bytes(param_bytes: int, cuda: bool) -> int:
    """What a process pair holds on the device while it starts: each worker its CUDA context and the model's
    parameters and buffers (flops.count: param_bytes) with the peak margin; inputs come after the start."""
    return int(2 * ((CUDA_WORKER_BYTES if cuda else 0) + PEAK_MARGIN * param_bytes))
