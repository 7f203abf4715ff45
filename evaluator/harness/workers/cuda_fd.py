"""Zero-copy output hand-over that crosses the sandbox: CUDA virtual-memory allocations shared as file descriptors.
stdlib (ctypes) + torch only.

Legacy CUDA IPC handles (handover.export_cuda) do not open across Unix users or mount namespaces (measured on the
H200: `benchmarks/results/sandbox-h200.md`), and the kernel runs as its own user in its own namespaces. A POSIX file
descriptor does cross: the candidate worker allocates one device buffer with the driver's VMM API
(cuMemCreate, shareable as a POSIX fd), copies each output into it (one device-to-device copy), and sends the fd
once over a Unix socket the orchestrator made (SCM_RIGHTS). The reference worker imports it and maps it READ-ONLY
into its own address space, once per buffer; each output is then cloned out of that mapping. Only the candidate's
buffer is ever shared, and the reference cannot be written through it.

What crosses is untrusted: the reference validates sizes against its own mapping before any read, and anything that
fails to import or map reads as "not a plain tensor".
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
from typing import Any

import torch

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READ = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
MAX_BUFFER_BYTES = 1 << 40


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _AllocProp(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_lib: Any = None


def _driver() -> Any:
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libcuda.so.1")
    return _lib


def _check(rc: int, what: str) -> None:
    if rc:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {(name.value or b'').decode() or rc}")


def _prop(device: int) -> _AllocProp:
    prop = _AllocProp()
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = _Location(CU_MEM_LOCATION_TYPE_DEVICE, device)
    return prop


def _granularity(device: int) -> int:
    size = ctypes.c_size_t()
    prop = _prop(device)
    _check(
        _driver().cuMemGetAllocationGranularity(
            ctypes.byref(size), ctypes.byref(prop), CU_MEM_ALLOC_GRANULARITY_MINIMUM
        ),
        "cuMemGetAllocationGranularity",
    )
    return int(size.value)


def _ready(device: int) -> None:
    """torch's primary context, current on this thread (the driver calls below use the current context)."""
    torch.cuda.init()
    torch.cuda.set_device(device)
    torch.empty(1, device=f"cuda:{device}")


def _map(handle: int, size: int, device: int, flags: int) -> int:
    lib = _driver()
    ptr = ctypes.c_uint64()
    _check(
        lib.cuMemAddressReserve(
            ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_uint64(0), ctypes.c_uint64(0)
        ),
        "cuMemAddressReserve",
    )
    try:
        _check(
            lib.cuMemMap(
                ctypes.c_uint64(ptr.value),
                ctypes.c_size_t(size),
                ctypes.c_size_t(0),
                ctypes.c_uint64(handle),
                ctypes.c_uint64(0),
            ),
            "cuMemMap",
        )
        access = _AccessDesc(_Location(CU_MEM_LOCATION_TYPE_DEVICE, device), flags)
        _check(
            lib.cuMemSetAccess(
                ctypes.c_uint64(ptr.value), ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1)
            ),
            "cuMemSetAccess",
        )
    except RuntimeError:
        lib.cuMemUnmap(ctypes.c_uint64(ptr.value), ctypes.c_size_t(size))
        lib.cuMemAddressFree(ctypes.c_uint64(ptr.value), ctypes.c_size_t(size))
        raise
    return int(ptr.value)


def _unmap(ptr: int, size: int, handle: int) -> None:
    lib = _driver()
    lib.cuMemUnmap(ctypes.c_uint64(ptr), ctypes.c_size_t(size))
    lib.cuMemAddressFree(ctypes.c_uint64(ptr), ctypes.c_size_t(size))
    lib.cuMemRelease(ctypes.c_uint64(handle))


class _View:
    """A device range as a uint8 array torch can wrap without a copy (__cuda_array_interface__; torch refuses the
    interface's read-only flag, so the reference's mapping is made read-only by the driver instead)."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (ptr, False),
            "version": 3,
            "strides": None,
        }


def _as_tensor(ptr: int, nbytes: int, device: int) -> torch.Tensor:
    return torch.as_tensor(_View(ptr, nbytes), device=f"cuda:{device}")


ALIGN = 256  # bytes between two outputs in one buffer


class Exporter:
    """Candidate side. Outputs are placed one after another in a shareable buffer (several may be outstanding at
    once: the timed outputs re-checked together); when one does not fit, a larger buffer is made and its fd sent,
    and the older buffers live until the orchestrator's release, when placement starts again at the front."""

    def __init__(self, sock: socket.socket, device: int) -> None:
        self.sock = sock
        self.device = device
        self.generation = 0
        self.buffers: dict[int, tuple[int, int, int]] = {}  # generation -> (ptr, size, handle)
        self.offset = 0

    def _grow(self, nbytes: int) -> None:
        _ready(self.device)
        grain = _granularity(self.device)
        current = self.buffers.get(self.generation, (0, 0, 0))[1]
        want = max(nbytes, 2 * current, 1 << 20)
        size = -(-want // grain) * grain
        lib = _driver()
        handle = ctypes.c_uint64()
        prop = _prop(self.device)
        _check(
            lib.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_uint64(0)),
            "cuMemCreate",
        )
        fd = ctypes.c_int(-1)
        try:
            ptr = _map(int(handle.value), size, self.device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            _check(
                lib.cuMemExportToShareableHandle(
                    ctypes.byref(fd),
                    ctypes.c_uint64(handle.value),
                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    ctypes.c_uint64(0),
                ),
                "cuMemExportToShareableHandle",
            )
        except RuntimeError:
            lib.cuMemRelease(ctypes.c_uint64(handle.value))
            raise
        self.generation += 1
        self.buffers[self.generation] = (ptr, size, int(handle.value))
        self.offset = 0
        try:
            socket.send_fds(self.sock, [struct.pack("!QQ", self.generation, size)], [fd.value])
        finally:
            os.close(fd.value)

    def release(self) -> None:
        """The reference has read every outstanding output: keep only the newest buffer, start at its front."""
        torch.cuda.synchronize(self.device)
        for generation in [g for g in self.buffers if g != self.generation]:
            _unmap(*self.buffers.pop(generation))
        self.offset = 0

    def publish(self, tensor: torch.Tensor) -> dict[str, Any]:
        """Copy `tensor` into the shared buffer; the descriptor the reference needs to read it back."""
        nbytes = tensor.numel() * tensor.element_size()
        size = self.buffers.get(self.generation, (0, 0, 0))[1]
        if self.offset + nbytes > size:
            self._grow(nbytes)
        ptr = self.buffers[self.generation][0]
        offset = self.offset
        if nbytes:
            dst = _as_tensor(ptr + offset, nbytes, self.device).view(tensor.dtype).view(tensor.shape)
            dst.copy_(tensor)
        self.offset = -(-(offset + nbytes) // ALIGN) * ALIGN
        torch.cuda.synchronize(self.device)
        return {
            "kind": "cuda_fd",
            "generation": self.generation,
            "oldest": min(self.buffers),
            "offset": offset,
            "nbytes": nbytes,
            "dtype": str(tensor.dtype),
            "shape": [int(s) for s in tensor.shape],
        }


class Importer:
    """Reference side: the candidate's buffers, each mapped read-only once; outputs are cloned out of them."""

    def __init__(self, sock: socket.socket, device: int, timeout: float = 30.0) -> None:
        self.sock = sock
        self.sock.settimeout(timeout)
        self.device = device
        self.generation = 0
        self.mappings: dict[int, tuple[int, int, int]] = {}  # generation -> (ptr, size, handle)

    def _take(self, generation: int) -> None:
        """Receive buffers until the one the descriptor names (buffers are sent in order, each once)."""
        if generation > self.generation + 64:
            raise ValueError("bad buffer generation")
        while self.generation < generation:
            data, fds, _, _ = socket.recv_fds(self.sock, 64, 4)
            try:
                if len(data) != 16 or len(fds) != 1:
                    raise ValueError("malformed buffer message")
                gen, size = struct.unpack("!QQ", data)
                if gen != self.generation + 1 or not 0 < size <= MAX_BUFFER_BYTES:
                    raise ValueError("bad buffer generation or size")
                _ready(self.device)
                handle = ctypes.c_uint64()
                _check(
                    _driver().cuMemImportFromShareableHandle(
                        ctypes.byref(handle), ctypes.c_void_p(fds[0]), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                    ),
                    "cuMemImportFromShareableHandle",
                )
                try:
                    ptr = _map(int(handle.value), size, self.device, CU_MEM_ACCESS_FLAGS_PROT_READ)
                except RuntimeError:
                    _driver().cuMemRelease(ctypes.c_uint64(handle.value))
                    raise
            finally:
                for fd in fds:
                    os.close(fd)
            self.generation = gen
            self.mappings[gen] = (ptr, size, int(handle.value))

    def read(self, desc: dict[str, Any], dtypes: dict[str, torch.dtype]) -> torch.Tensor:
        fields: list[Any] = [desc.get(k) for k in ("generation", "oldest", "offset", "nbytes")]
        shape = desc.get("shape")
        dtype = dtypes.get(desc.get("dtype", ""))
        if dtype is None or not all(type(v) is int and v >= 0 for v in fields) or not isinstance(shape, list):
            raise ValueError("bad output descriptor")
        generation, oldest, offset, nbytes = fields
        if len(shape) > 16 or not all(type(s) is int and s >= 0 for s in shape):
            raise ValueError("bad output shape")
        count = 1
        for s in shape:
            count *= s
        if count * torch.empty(0, dtype=dtype).element_size() != nbytes:
            raise ValueError("output size does not match its shape")
        self._take(generation)
        for old in [g for g in self.mappings if g < min(oldest, generation)]:  # the candidate let these go
            torch.cuda.synchronize(self.device)
            _unmap(*self.mappings.pop(old))
        if generation not in self.mappings:
            raise ValueError("the output names a buffer that is gone")
        ptr, size, _ = self.mappings[generation]
        if offset + nbytes > size:
            raise ValueError("the output reaches past the shared buffer")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype, device=f"cuda:{self.device}")
        view = _as_tensor(ptr + offset, nbytes, self.device).view(dtype).view(shape)
        copy = view.clone()
        torch.cuda.synchronize(self.device)
        return copy

    def close(self) -> None:
        if self.mappings:
            torch.cuda.synchronize(self.device)
        for generation in list(self.mappings):
            _unmap(*self.mappings.pop(generation))
