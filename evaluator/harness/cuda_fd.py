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
    """A device range as a uint8 array torch can wrap without a copy (__cuda_array_interface__)."""

    def __init__(self, ptr: int, nbytes: int, read_only: bool) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (ptr, read_only),
            "version": 3,
            "strides": None,
        }


def _as_tensor(ptr: int, nbytes: int, device: int, read_only: bool) -> torch.Tensor:
    return torch.as_tensor(_View(ptr, nbytes, read_only), device=f"cuda:{device}")


class Exporter:
    """Candidate side: one shareable buffer, grown when an output does not fit; its fd is sent once per buffer."""

    def __init__(self, sock: socket.socket, device: int) -> None:
        self.sock = sock
        self.device = device
        self.generation = 0
        self.size = 0
        self.ptr = 0
        self.handle = 0

    def _grow(self, nbytes: int) -> None:
        _ready(self.device)
        grain = _granularity(self.device)
        size = max(grain, -(-nbytes // grain) * grain)
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
        if self.handle:
            torch.cuda.synchronize(self.device)
            _unmap(self.ptr, self.size, self.handle)
        self.generation += 1
        self.ptr, self.size, self.handle = ptr, size, int(handle.value)
        try:
            socket.send_fds(self.sock, [struct.pack("!QQ", self.generation, size)], [fd.value])
        finally:
            os.close(fd.value)

    def publish(self, tensor: torch.Tensor) -> dict[str, Any]:
        """Copy `tensor` into the shared buffer; the descriptor the reference needs to read it back."""
        nbytes = tensor.numel() * tensor.element_size()
        if nbytes > self.size:
            self._grow(nbytes)
        if nbytes:
            dst = _as_tensor(self.ptr, nbytes, self.device, False).view(tensor.dtype).view(tensor.shape)
            dst.copy_(tensor)
        torch.cuda.synchronize(self.device)
        return {
            "kind": "cuda_fd",
            "generation": self.generation,
            "nbytes": nbytes,
            "dtype": str(tensor.dtype),
            "shape": [int(s) for s in tensor.shape],
        }


class Importer:
    """Reference side: the candidate's current buffer, mapped read-only; outputs are cloned out of it."""

    def __init__(self, sock: socket.socket, device: int, timeout: float = 30.0) -> None:
        self.sock = sock
        self.sock.settimeout(timeout)
        self.device = device
        self.generation = 0
        self.size = 0
        self.ptr = 0
        self.handle = 0

    def _take(self, generation: int) -> None:
        """Receive buffers until the one the descriptor names (a buffer replaced earlier was sent before it)."""
        while self.generation != generation:
            data, fds, _, _ = socket.recv_fds(self.sock, 64, 4)
            try:
                if len(data) != 16 or len(fds) != 1:
                    raise ValueError("malformed buffer message")
                gen, size = struct.unpack("!QQ", data)
                if gen <= self.generation or not 0 < size <= MAX_BUFFER_BYTES:
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
            self.close()
            self.generation, self.size, self.ptr, self.handle = gen, size, ptr, int(handle.value)

    def read(self, desc: dict[str, Any], dtypes: dict[str, torch.dtype]) -> torch.Tensor:
        generation, nbytes, shape = desc.get("generation"), desc.get("nbytes"), desc.get("shape")
        dtype = dtypes.get(desc.get("dtype"))  # type: ignore[arg-type]
        if dtype is None or type(generation) is not int or type(nbytes) is not int or not isinstance(shape, list):
            raise ValueError("bad output descriptor")
        if not all(type(s) is int and s >= 0 for s in shape) or len(shape) > 16:
            raise ValueError("bad output shape")
        count = 1
        for s in shape:
            count *= s
        if count * torch.empty(0, dtype=dtype).element_size() != nbytes:
            raise ValueError("output size does not match its shape")
        self._take(generation)
        if nbytes > self.size:
            raise ValueError("the output reaches past the shared buffer")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype, device=f"cuda:{self.device}")
        view = _as_tensor(self.ptr, nbytes, self.device, True).view(dtype).view(shape)
        copy = view.clone()
        torch.cuda.synchronize(self.device)
        return copy

    def close(self) -> None:
        if self.handle:
            torch.cuda.synchronize(self.device)
            _unmap(self.ptr, self.size, self.handle)
            self.handle = self.ptr = self.size = 0
