"""Moving a candidate's output tensor to the clean process that judges it. stdlib + torch only.

Inputs never cross processes: both workers regenerate them on the device from the same secret seed (see
`inputs.make_inputs`), which costs nothing and leaves the candidate unable to touch the clean side's copy.
Outputs must cross, from the candidate to the reference worker:

- "cuda_ipc": the candidate exports a CUDA IPC handle of the output's storage; the reference opens it, clones the
  tensor into its own memory and closes the mapping. Zero copies through the host, so a 6.4 GB output costs one
  device-to-device copy instead of ~25 GB of file traffic per trial. Only the candidate's memory is ever shared
  (never the other way round: a handle exposes its whole allocator segment, which on the clean side could hold a
  reference output).
- "file": `torch.save` into the evaluation's io dir, loaded with `weights_only=True` by `load_untrusted_file` (CPU
  runs, or a GPU set-up where the IPC probe fails, e.g. processes in different containers).

A descriptor is plain JSON written by untrusted code: the reference validates every field, and any failure reads as
"not a plain tensor" for the verdict, never as a harness error.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import torch

from evaluator.harness.workers.inputs import to_device

try:  # outputs may cross processes as files: skip the zip CRC32, which halves save and load throughput
    from torch.utils.serialization import config as _serialization_config

    _serialization_config.save.compute_crc32 = False
except (ImportError, AttributeError):
    pass

MAX_DIMS = 16
DTYPES = _DTYPES = {
    str(d): d
    for d in (
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
        torch.complex64,
        torch.complex128,
    )
}


def export_cuda(tensor: torch.Tensor) -> dict[str, Any]:
    """The IPC descriptor of a CUDA tensor; the caller keeps the tensor alive until the consumer is done."""
    storage = tensor.untyped_storage()
    device, handle, size_bytes, offset_bytes, rc_handle, rc_offset, event_handle, event_sync = storage._share_cuda_()
    return {
        "kind": "cuda_ipc",
        "device": int(device),
        "handle": handle.hex(),
        "storage_bytes": int(size_bytes),
        "storage_offset_bytes": int(offset_bytes),
        "ref_counter": rc_handle.hex(),
        "ref_counter_offset": int(rc_offset),
        "event": event_handle.hex() if event_handle else None,
        "event_sync": bool(event_sync),
        "dtype": str(tensor.dtype),
        "shape": [int(s) for s in tensor.shape],
        "stride": [int(s) for s in tensor.stride()],
        "offset": int(tensor.storage_offset()),
    }


def _ints(value: Any, name: str) -> list[int]:
    if not isinstance(value, list) or len(value) > MAX_DIMS or not all(type(v) is int and v >= 0 for v in value):
        raise ValueError(f"bad {name} in the output descriptor")
    return value


def validate(desc: dict[str, Any]) -> tuple[torch.dtype, list[int], list[int], list[int]]:
    """Check an untrusted descriptor before any CUDA call: known dtype, sane sizes, and a view that stays inside
    the shared storage (never trust torch's own checks to stop a read past the end of foreign memory)."""
    dtype = _DTYPES.get(desc.get("dtype", ""))
    if dtype is None:
        raise ValueError(f"unsupported dtype {str(desc.get('dtype'))[:40]!r}")
    shape, stride = _ints(desc.get("shape"), "shape"), _ints(desc.get("stride"), "stride")
    if len(shape) != len(stride):
        raise ValueError("shape and stride differ in length")
    numbers: list[Any] = [
        desc.get(k) for k in ("device", "storage_bytes", "storage_offset_bytes", "ref_counter_offset", "offset")
    ]
    if not all(type(n) is int and n >= 0 for n in numbers):
        raise ValueError("bad sizes in the output descriptor")
    for key in ("handle", "ref_counter"):
        value = desc.get(key)
        if not isinstance(value, str) or len(value) > 4096:
            raise ValueError(f"bad {key} in the output descriptor")
    itemsize = torch.empty(0, dtype=dtype).element_size()
    if 0 not in shape:
        last = numbers[4] + sum((size - 1) * step for size, step in zip(shape, stride, strict=True))
        if (last + 1) * itemsize > numbers[1]:
            raise ValueError("the output view reaches past its shared storage")
    return dtype, shape, stride, numbers


def open_cuda(desc: dict[str, Any], device: str) -> torch.Tensor:
    """Clone the tensor a descriptor names into this process's memory (raises ValueError/RuntimeError if bad)."""
    dtype, shape, stride, (dev, storage_bytes, storage_offset, rc_offset, offset) = validate(desc)
    event = desc.get("event")
    torch.cuda.init()  # opening a handle in a process without a CUDA context crashes instead of raising
    storage = torch.UntypedStorage._new_shared_cuda(
        dev,
        bytes.fromhex(desc["handle"]),
        storage_bytes,
        storage_offset,
        bytes.fromhex(desc["ref_counter"]),
        rc_offset,
        bytes.fromhex(str(event)) if event else None,
        bool(desc.get("event_sync")),
    )
    view = torch.empty(0, dtype=dtype, device=device)
    view.set_(storage, offset, shape, stride)
    copy = view.clone()
    torch.cuda.synchronize()
    del view, storage  # closes the mapping and releases the producer's reference count
    return copy


def load_untrusted_file(path: str, device: str) -> Any:
    """Load (then remove) a file the candidate wrote into its own io folder. weights_only: plain tensors and
    containers, no code. The folder belongs to the kernel, so neither it nor the file may be a symlink (a root
    reader must not be sent to another file), and the file must be a regular one (not a FIFO or a device)."""
    folder, name = os.path.split(path)
    parent, leaf = os.path.split(folder)
    base = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        io_dir = os.open(leaf, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=base)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=io_dir)
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise ValueError("the output is not a regular file")
                value = torch.load(fh, map_location="cpu", weights_only=True)
            os.unlink(name, dir_fd=io_dir)
        finally:
            os.close(io_dir)
    finally:
        os.close(base)
    return to_device(value, device)
