"""The launch lead before each timed CUDA call (docs/protocol.md section 4). torch and ctypes only.

Without it the GPU sits idle while the host gets from `start.record()` to the call's first kernel, and that latency
is timed: 26-71 us for one torch.matmul on the H200, different in every process and over time
(benchmarks/results/timing-spread-h200.md), 10-30 % of a 0.2 ms problem, and the main cause of its speedup
differing between process pairs. With it, the harness first launches a kernel that spins for `lead_us` on every
thread slot of every SM, records the start event behind it, and only then calls the kernel: the host launches the
call while the GPU is held, so the events time the device, and host time beyond the lead is still timed.

Why a kernel that fills every SM rather than any short GPU work (the flush, torch.cuda._sleep): a call may launch
work on a side stream that does not wait for the timed stream. Behind a partial lead that work would run before the
start event, untimed; behind this one it finds no free thread slot on any SM until the lead ends, when the start
event fires. The kernel is hand-written PTX loaded through the driver (no compiler needed), reading %globaltimer.
"""

from __future__ import annotations

import ctypes

import torch

# Captured at import: the candidate worker imports this module before any kernel code, so a kernel that rebinds
# these (a fake driver, a device reporting one SM) cannot shrink the lead it is timed behind.
_CDLL = ctypes.CDLL
_device_properties = torch.cuda.get_device_properties
_current_stream = torch.cuda.current_stream
_synchronize = torch.cuda.synchronize

_PTX = b"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry kbv_launch_lead(.param .u64 kbv_launch_lead_ns)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [kbv_launch_lead_ns];
    mov.u64 %rd2, %globaltimer;
    add.s64 %rd3, %rd2, %rd1;
$L_spin:
    mov.u64 %rd4, %globaltimer;
    setp.lt.u64 %p1, %rd4, %rd3;
    @%p1 bra $L_spin;
    ret;
}
\0"""


class LaunchLead:
    """Callable: launch the lead on the current stream. `enabled` False (and calling it a no-op) on CPU, with
    `lead_us` 0, or when the driver cannot load or run it; `detail` says which."""

    def __init__(self, device: str, lead_us: float) -> None:
        self.enabled = False
        self.detail = "no launch lead"
        if not device.startswith("cuda") or lead_us <= 0:
            return
        try:
            self._setup(device, lead_us)
        except (OSError, RuntimeError, AttributeError) as exc:
            self.detail = f"no launch lead ({exc})"
            return
        self.enabled = True

    def _setup(self, device: str, lead_us: float) -> None:
        props = _device_properties(torch.device(device))
        self._grid, self._block = lead_shape(
            int(props.multi_processor_count),
            int(getattr(props, "max_threads_per_multi_processor", 2048) or 2048),
            int(getattr(props, "max_threads_per_block", 1024) or 1024),
        )
        torch.zeros(1, device=device)  # the runtime makes torch's context current in this thread
        cuda = _CDLL("libcuda.so.1")
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        _check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(_PTX)), "cuModuleLoadData")
        _check(cuda.cuModuleGetFunction(ctypes.byref(function), module, b"kbv_launch_lead"), "cuModuleGetFunction")
        self._launch_fn = cuda.cuLaunchKernel
        self._launch_fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        self._function = function
        self._ns = ctypes.c_uint64(int(lead_us * 1000))
        self._params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(self._ns), ctypes.c_void_p))
        self._stream = _current_stream
        self._launch()
        _synchronize()
        self.detail = (
            f"launch lead: {lead_us:g} us spin on all {self._grid * self._block} thread slots "
            f"({self._grid} blocks of {self._block}) before the start event"
        )

    def _launch(self) -> None:
        stream = ctypes.c_void_p(self._stream().cuda_stream)
        result = self._launch_fn(self._function, self._grid, 1, 1, self._block, 1, 1, 0, stream, self._params, None)
        _check(result, "cuLaunchKernel")

    def __call__(self) -> None:
        if self.enabled:
            self._launch()


def lead_shape(sms: int, threads_per_sm: int, threads_per_block: int) -> tuple[int, int]:
    """(blocks, threads per block) that fill every SM's thread slots exactly, so no slot is left for another
    kernel's block: 2 x 1024 per SM on the H100/H200 and A100, 2 x 768 where an SM holds 1536 threads (Ada)."""
    per_block_max = min(1024, threads_per_block)
    blocks_per_sm = -(-threads_per_sm // per_block_max)
    return sms * blocks_per_sm, threads_per_sm // blocks_per_sm


def _check(result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what} failed: CUresult {result}")
