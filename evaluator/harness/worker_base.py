"""What both worker processes share: self-imposed limits, the command loop, and torch helpers.

Imports only the stdlib and torch. Nothing here ever imports candidate code.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import stat
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

try:  # outputs may cross processes as files: skip the zip CRC32, which halves save and load throughput
    from torch.utils.serialization import config as _serialization_config

    _serialization_config.save.compute_crc32 = False
except (ImportError, AttributeError):
    pass

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def apply_limits(limits: dict[str, Any], *, dumpable: bool) -> None:
    """Limit this process before any untrusted code runs; soft and hard limits alike (cannot be raised back).

    RLIMIT_AS is deliberately not used: CUDA reserves huge virtual ranges. RLIMIT_DATA is used only on CPU;
    on CUDA the orchestrator's RSS watchdog enforces host memory instead.
    """
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # if the orchestrator (or the sandbox's init) dies, so do we
    if os.getppid() == 1 and not limits.get("pid_namespace"):  # in the sandbox, pid 1 is bwrap's init, our parent
        os._exit(70)
    if not dumpable:
        _prctl(PR_SET_DUMPABLE, 0)  # clean workers: same-user processes cannot ptrace us or open our /proc fds
    pairs = {
        "data_bytes": resource.RLIMIT_DATA,
        "fsize_bytes": resource.RLIMIT_FSIZE,
        "nproc": resource.RLIMIT_NPROC,
        "cpu_seconds": resource.RLIMIT_CPU,
    }
    for key, which in pairs.items():
        value = limits.get(key)
        if value:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (int(value), int(value)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def short_exception(exc: BaseException, limit: int = 1500) -> str:
    """The exception's last frames and message, cut to head and tail."""
    message = f"{type(exc).__name__}: {exc}".strip()
    if len(message) > limit // 2:
        message = message[: limit // 4] + " [...] " + message[-limit // 4 :]
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-3)).strip()
    if len(frames) > limit // 2:
        frames = "[...]" + frames[-limit // 2 :]
    return f"{message}\n{frames}" if frames else message


def serve(handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]) -> None:
    """Read JSON-line commands from fd argv[1], answer on fd argv[2], until "exit"."""
    cmd_fd, rep_fd = int(sys.argv[1]), int(sys.argv[2])
    reader = os.fdopen(cmd_fd, "rb", buffering=0)
    buffer = b""
    while True:
        while b"\n" not in buffer:
            chunk = reader.read(1 << 16)
            if not chunk:
                os._exit(0)
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        message = json.loads(line)
        cmd = message.get("cmd")
        if cmd == "exit":
            os._exit(0)
        try:
            reply = handlers[cmd](message)
            reply.setdefault("ok", True)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an answer, never a dead worker
            reply = {"ok": False, "error": short_exception(exc), "exc_type": type(exc).__name__}
        data = (json.dumps(reply, default=str) + "\n").encode()
        while data:
            written = os.write(rep_fd, data)
            data = data[written:]


# --- torch helpers ------------------------------------------------------------------------------------------------


def warm_up(msg: dict[str, Any]) -> dict[str, Any]:
    """Pay first-use costs before any problem or kernel is known (a standby worker pays them while it waits): the
    CUDA context and, with `meta`, torch's meta-device registrations (about 0.75 s on first use, for the footprint)."""
    if str(msg["device"]).startswith("cuda"):
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
    if msg.get("meta"):
        with torch.device("meta"):
            torch.nn.Linear(2, 2)(torch.empty(1, 2))
    return {}


def set_precision(tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def precision_flags() -> dict[str, bool]:
    return {
        "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
    }


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


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
    except Exception:  # noqa: BLE001
        return None


def to_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list | tuple):
        return type(value)(to_device(v, device) for v in value)
    return value


def clone_all(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def load_problem(source: str) -> dict[str, Any]:
    """Execute a KernelBench problem file into a fresh namespace (the problem text is public and trusted)."""
    ns: dict[str, Any] = {"__name__": "kernelbench_problem"}
    exec(compile(source, "problem.py", "exec"), ns)  # noqa: S102
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if name not in ns:
            raise ValueError(f"problem file defines no {name}")
    return ns


def make_inputs(ns: dict[str, Any], seed: int, scale: float | str, device: str) -> list[Any]:
    """get_inputs() under a seed, generated on the device, float tensors scaled (the distribution factor), or, when
    `scale` is "mixed", made positive with up to 64 random elements negated: a kernel that probes a few elements
    (at fixed or random places) to pick a sign-specific path almost surely sees only positives and takes it.

    Both workers call this with the same seed and get the same bits (same torch, same device), so inputs never have
    to cross processes. A candidate that patches torch's generators only changes its own inputs, and then its
    outputs no longer match the reference computed on the real ones.
    """
    with torch.device(device):
        torch.manual_seed(seed)
        raw = list(ns["get_inputs"]())
    inputs = []
    signs = torch.Generator(device=device).manual_seed(seed ^ 0x5EED)
    for value in to_device(raw, device):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            if scale == "mixed":
                value = value.abs().contiguous()
                if value.numel():
                    flat = value.view(-1)
                    count = max(1, min(64, flat.numel() // 64))
                    where = torch.randint(0, flat.numel(), (count,), generator=signs, device=value.device)
                    flat[where] = -flat[where]
            elif scale != 1.0:
                value = value * float(scale)
        inputs.append(value)
    return inputs


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


def no_flush() -> None:
    """The flush of KernelBench's own timing loop (the comparison loop): none."""


class L2Flusher:
    """Evicts the GPU's L2 before a timed call: resets persisting L2 lines, then writes >= 2x L2 (>= 256 MiB)."""

    def __init__(self, device: str) -> None:
        self.enabled = device.startswith("cuda")
        self.buffer: torch.Tensor | None = None
        self.reset_fn: Any = None
        self.detail = "no flush (CPU)"
        if not self.enabled:
            return
        l2 = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0))
        nbytes = max(2 * l2, 256 << 20)
        self.buffer = torch.empty(nbytes, dtype=torch.int8, device=device)
        self.reset_fn = _cudart_function("cudaCtxResetPersistingL2Cache")
        limit_fn = _cudart_function("cudaDeviceSetLimit")
        if limit_fn is not None:
            limit_fn(ctypes.c_int(0x06), ctypes.c_size_t(0))  # cudaLimitPersistingL2CacheSize = 0
        reset = "persisting-L2 reset each call" if self.reset_fn else "persisting-L2 reset unavailable"
        self.detail = f"write {nbytes >> 20} MiB (L2 {l2 >> 20} MiB) before each timed call; {reset}"

    def __call__(self) -> None:
        if not self.enabled:
            return
        if self.reset_fn is not None:
            self.reset_fn()
        assert self.buffer is not None
        self.buffer.fill_(1)


def _cudart_function(name: str) -> Any:
    """Find a CUDA runtime function in the libcudart torch already loaded (read from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "libcudart" in line}
        for path in sorted(paths):
            return getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError):
        return None
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


def tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, list | tuple):
        return sum(tensor_bytes(v) for v in value)
    return 0


def now_ns() -> int:
    return time.perf_counter_ns()
