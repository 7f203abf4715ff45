"""Speed of light: device peaks and the roofline bound of one problem on one device.

A problem's work is counted once (`flops.py`, a meta-device forward: no memory, no arithmetic): `matrix_flops` (matmul,
convolution, attention: tensor-core work, torch.utils.flop_counter's registry), `vector_flops` (elementwise ops,
reductions, softmax: CUDA-core work, one FLOP per output element, five per softmax element) and `bytes` (every input
read once, the output written once, every parameter and buffer read once). The bound is

    bound_ms = max(matrix_flops / tensor_peak + vector_flops / fp32_peak,  bytes / bandwidth)

a lower bound on any correct kernel's time on that device: no kernel moves less data than that, nor does less
arithmetic unless it simplifies the algebra (some Level-2 problems allow it: a kernel faster than the bound is then
not impossible, which is why the bound only flags). `fraction` = bound / kernel time (1.0: at the hardware's limit).

The tensor peak is chosen by the data's precision: fp32 data is timed under the TF32 flags (protocol section 4), so
its matrix work may run at the TF32 rate; bf16/fp16 data at the BF16 rate. Peaks are dense (no 2:4 sparsity).

stdlib only: the orchestrator computes the bound from the reference worker's counts and the candidate's median.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    fp32: float  # FLOP/s, CUDA cores (non-tensor)
    tf32: float  # FLOP/s, tensor cores, dense
    bf16: float  # FLOP/s, tensor cores, dense (FP16 the same on these parts)
    bandwidth: float  # bytes/s, HBM


T = 1e12
# Matched in order against torch.cuda.get_device_name(), lower-cased; the first whose every fragment occurs wins.
# Sources (vendor datasheets; dense figures are half of the "with sparsity" ones printed there):
# - H200 SXM: NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200): FP32 67 TF, TF32 989 TF
#   and BF16 1,979 TF with sparsity, 4.8 TB/s HBM3e.
# - H100 SXM / PCIe: NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100): SXM FP32 67 TF,
#   TF32 989 TF, BF16 1,979 TF (sparse), 3.35 TB/s; PCIe FP32 51 TF, TF32 756 TF, BF16 1,513 TF (sparse), 2 TB/s;
#   NVL FP32 60 TF, TF32 835 TF, BF16 1,671 TF (sparse), 3.9 TB/s.
# - A100: NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100): FP32 19.5 TF, TF32 156 TF,
#   BF16 312 TF (dense); 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s, 40GB 1,555 GB/s.
PEAKS: tuple[tuple[tuple[str, ...], DevicePeaks], ...] = (
    (("h200",), DevicePeaks("H200 SXM", 67 * T, 494.5 * T, 989.5 * T, 4.8e12)),
    (("h100", "nvl"), DevicePeaks("H100 NVL", 60 * T, 417.5 * T, 835.5 * T, 3.9e12)),
    (("h100", "pcie"), DevicePeaks("H100 PCIe", 51 * T, 378 * T, 756.5 * T, 2.0e12)),
    (("h100",), DevicePeaks("H100 SXM", 67 * T, 494.5 * T, 989.5 * T, 3.35e12)),
    (("a100", "80gb", "pcie"), DevicePeaks("A100 80GB PCIe", 19.5 * T, 156 * T, 312 * T, 1.935e12)),
    (("a100", "80gb"), DevicePeaks("A100 80GB SXM", 19.5 * T, 156 * T, 312 * T, 2.039e12)),
    (("a100",), DevicePeaks("A100 40GB", 19.5 * T, 156 * T, 312 * T, 1.555e12)),
)


def peaks_for(device_name: str | None) -> DevicePeaks | None:
    """The peaks of a device by its CUDA name; None for the CPU or a GPU this table does not know."""
    lowered = (device_name or "").lower()
    for fragments, peaks in PEAKS:
        if all(f in lowered for f in fragments):
            return peaks
    return None


def precision_of(dtype: str | None) -> str:
    """The tensor-core rate the problem's data may use (see the module docstring)."""
    return "bf16" if dtype in ("bfloat16", "float16", "half") else "tf32"


def speed_of_light(
    counts: dict[str, Any] | None, device_name: str | None, kernel_ms: float | None
) -> dict[str, Any] | None:
    """The record's `speed_of_light`: {flops, bytes, bound_ms, fraction, ...}; None when nothing was counted.
    `bound_ms` and `fraction` are null where the device is unknown (the CPU); `fraction` also without a time."""
    if not counts or counts.get("bytes") is None:
        return None
    matrix = int(counts.get("matrix_flops") or 0)
    vector = int(counts.get("vector_flops") or 0)
    nbytes = int(counts["bytes"])
    precision = precision_of(counts.get("dtype"))
    out: dict[str, Any] = {
        "flops": matrix + vector,
        "bytes": nbytes,
        "bound_ms": None,
        "fraction": None,
        "matrix_flops": matrix,
        "vector_flops": vector,
        "precision": precision,
        "device": None,
        "limit": None,
        **{key: counts.get(key) for key in ("input_bytes", "output_bytes", "param_bytes", "dtype")},
    }
    peaks = peaks_for(device_name)
    if peaks is None:
        return out
    compute_ms = 1e3 * (matrix / getattr(peaks, precision) + vector / peaks.fp32)
    memory_ms = 1e3 * nbytes / peaks.bandwidth
    bound = max(compute_ms, memory_ms)
    out.update(
        bound_ms=bound,
        compute_ms=compute_ms,
        memory_ms=memory_ms,
        device=peaks.name,
        limit="compute" if compute_ms >= memory_ms else "memory",
    )
    if kernel_ms is not None and kernel_ms > 0 and bound > 0:
        out["fraction"] = bound / kernel_ms
    return out
