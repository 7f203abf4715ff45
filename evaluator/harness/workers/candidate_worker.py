"""The candidate worker: the only process that imports the kernel. It runs ModelNew on inputs regenerated from the
clean side's seeds, publishes outputs (CUDA IPC or a file) for a clean process to compare, and times itself with
clocks captured before the kernel was imported. Whatever it reports is evidence; verdicts are made in clean
processes and by the orchestrator.

Run as `python -m evaluator.harness.workers.candidate_worker CMD_FD REPLY_FD LIMITS_JSON` by the orchestrator only.
"""

from __future__ import annotations

import json
import sys

if __name__ == "__main__":
    from evaluator.harness.sandbox.limits import apply_limits

    apply_limits(json.loads(sys.argv[3]), dumpable=True)

import builtins
import importlib.util
import os
import socket
import time
from pathlib import Path
from typing import Any

import torch
import torch.utils.cpp_extension

from evaluator.harness.commands import Command
from evaluator.harness.timing import time_calls
from evaluator.harness.workers import command_loop as _loop_module
from evaluator.harness.workers import inputs as _inputs_module
from evaluator.harness.workers import tamper_watch
from evaluator.harness.workers.aliasing import overlaps as _overlaps
from evaluator.harness.workers.aliasing import tensors as _tensors
from evaluator.harness.workers.build_signal import watched
from evaluator.harness.workers.command_loop import serve
from evaluator.harness.workers.cuda_fd import Exporter
from evaluator.harness.workers.device import poison_allocator, precision_flags, set_precision, warm_up
from evaluator.harness.workers.extensions import suffix_extension_names
from evaluator.harness.workers.handover import export_cuda
from evaluator.harness.workers.inputs import load_problem, make_inputs
from evaluator.harness.workers.l2 import L2Flusher, flusher_before_sets, no_flush
from evaluator.harness.workers.lead import LaunchLead
from evaluator.harness.workers.memory import peak_bytes
from evaluator.harness.workers.profiling import profile_call

# --- references captured before any candidate code exists: the kernel may replace the originals (A4, C1) --------
_replaced_functions = tamper_watch.replaced_functions
_new_threads = tamper_watch.new_threads
_clock_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_sync = torch.cuda.synchronize
_equal = torch.equal
_save = torch.save
_load = torch.load
_export = export_cuda
_make_inputs = make_inputs
_load_problem = load_problem
_no_flush = no_flush
_Tensor = torch.Tensor
_type = builtins.type
_isinstance = builtins.isinstance
_clone = torch.Tensor.clone
_copy = torch.Tensor.copy_
_detach = torch.Tensor.detach  # never out.detach(): an instance attribute could shadow it (A3)
_listdir = os.listdir
_sleep = time.sleep
_set_precision = set_precision
_precision_flags = precision_flags


def _load_clean(path: str, device: str) -> Any:
    return _inputs_module.to_device(_load(path, map_location="cpu", weights_only=True, mmap=True), device)


class Candidate:
    """State of the candidate side for one evaluation."""

    def __init__(self) -> None:
        self.model: Any = None
        self.device = "cpu"
        self.sets: list[list[Any]] = []
        self.flusher: L2Flusher | None = None
        self.lead: LaunchLead | None = None
        self.task_base: int | None = None
        self.kept: dict[int, Any] = {}
        self.problem: dict[str, Any] = {}
        self.handover = "file"  # "cuda_fd", "cuda_ipc" or "file" (handover.py, cuda_fd.py)
        self.exporter: Exporter | None = None
        self.exports: list[torch.Tensor] = []  # outputs shared by CUDA IPC, alive until the orchestrator's release
        # The precision flags read back right before the kernel's calls, per phase (the record's environment).
        self.flags_seen: dict[str, dict[str, Any]] = {}

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Import the kernel (this compiles load_inline / Triton code), then build ModelNew with seed 42."""
        self.device = msg["device"]
        ext_dir = Path(msg["extensions_dir"])
        (ext_dir / "triton").mkdir(parents=True, exist_ok=True)
        os.environ["TORCH_EXTENSIONS_DIR"] = str(ext_dir)
        os.environ["TRITON_CACHE_DIR"] = str(ext_dir / "triton")
        if self.device.startswith("cuda"):
            torch.cuda.set_device(0)
            torch.cuda.set_per_process_memory_fraction(float(msg["gpu_memory_fraction"]))
        _set_precision(False)  # built under the reference's flags; each phase sets its own before calling the kernel
        suffix_extension_names(msg["suffix"])
        init = _load_clean(msg["init_path"], "cpu")
        start = _clock_ns()
        try:
            name = f"candidate_kernel_{msg['suffix']}"
            spec = importlib.util.spec_from_file_location(name, msg["kernel_path"])
            if spec is None or spec.loader is None:  # not a .py path (the harness names it): no loader for it
                raise ImportError(f"no loader for {msg['kernel_path']!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        except BaseException as exc:  # SyntaxError, build failure, sys.exit: a compile error
            return {"ok": False, "phase": "compile", "error": _loop_module.short_exception(exc)}
        compile_s = (_clock_ns() - start) / 1e9
        model_cls = getattr(module, "ModelNew", None)
        if model_cls is None:
            return {
                "ok": False,
                "phase": "compile",
                "error": "the kernel defines no ModelNew class",
                "compile_s": compile_s,
            }
        if not (_isinstance(model_cls, type) and issubclass(model_cls, torch.nn.Module)):
            return {"ok": False, "phase": "compile", "error": "ModelNew is not an nn.Module subclass"}
        try:
            torch.manual_seed(42)  # KernelBench convention: seed 42 before each construction
            self.model = model_cls(*init).to(self.device)
        except BaseException as exc:
            return {
                "ok": False,
                "phase": "construct",
                "error": _loop_module.short_exception(exc),
                "compile_s": compile_s,
            }
        state = [
            [name, list(t.shape), str(t.dtype)]
            for name, t in self.model.state_dict().items()
            if _isinstance(t, torch.Tensor)
        ]
        return {"compile_s": compile_s, "state": state}

    def load_params(self, msg: dict[str, Any]) -> dict[str, Any]:
        values = _load_clean(msg["path"], self.device)
        state = self.model.state_dict()
        with torch.no_grad():
            for name, value in values.items():
                state[name].copy_(value)
        return {"loaded": len(values)}

    def extensions_dir(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Where builds after import go (a kernel that compiles on its first call)."""
        Path(msg["path"]).mkdir(parents=True, exist_ok=True)
        os.environ["TORCH_EXTENSIONS_DIR"] = msg["path"]
        return {}

    def set_problem(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The problem's get_inputs(), so this process can regenerate the clean side's inputs from a seed."""
        self.problem = _load_problem(msg["source"])
        return {}

    def _inputs(self, seed: int, scale: float | str = 1.0) -> list[Any]:
        return _make_inputs(self.problem, int(seed), scale, self.device)

    def probe_handover(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Publish a known tensor (through the shared fd buffer when given its socket, else by CUDA IPC); the
        orchestrator asks the reference worker to read it back."""
        if not self.device.startswith("cuda"):
            return {"desc": None}
        probe = torch.arange(1024, dtype=torch.float32, device=self.device)
        if msg.get("fd_socket") is not None:
            try:
                sock = socket.socket(fileno=int(msg["fd_socket"]))
                self.exporter = Exporter(sock, torch.cuda.current_device())
                return {"desc": self.exporter.publish(probe)}
            except Exception as exc:  # the answer is "no", with the reason
                return {"desc": None, "reason": _loop_module.short_exception(exc, 300)}
        self.exports.append(probe)
        return {"desc": _export(probe)}

    def use_handover(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.handover = str(msg["handover"])
        self.exports = []
        return {}

    def release(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.exports = []
        if self.exporter is not None:
            self.exporter.release()
        if msg.get("empty_cache") and self.device.startswith("cuda"):
            torch.cuda.empty_cache()
        return {}

    def _publish(self, out: torch.Tensor, path: str) -> dict[str, Any]:
        """Hand an output to the clean side: a CUDA IPC descriptor (kept alive until release) or a file."""
        out = _detach(out)
        if self.handover == "cuda_fd" and self.exporter is not None:
            return self.exporter.publish(out)
        if self.handover == "cuda_ipc":
            try:
                desc = _export(out)
            except Exception:  # memory not from the caching allocator (e.g. an extension's own)
                out = _clone(out)
                desc = _export(out)
            self.exports.append(out)
            return desc
        _save(out, path)
        return {"kind": "file"}

    def run(self, msg: dict[str, Any]) -> dict[str, Any]:
        """One correctness call on inputs regenerated from the trial's seed; the output is published. With
        `refill_seed`, a call on those inputs comes first and the published one runs on the SAME tensors refilled in
        place with `refill_seed`'s values (same objects and addresses, new contents: C7, address-keyed caches)."""
        inputs = self._inputs(msg["seed"], msg["scale"])
        # Correctness under the reference's flags (full FP32): the kernel is judged on the arithmetic it chose
        # itself (its own TF32 cuBLAS call, a Triton tl.dot, flags it sets), not on TF32 the harness chose for it.
        _set_precision(False)
        self.flags_seen["correctness"] = _precision_flags()
        try:
            earlier = self._refill(inputs, msg) if msg.get("refill_seed") is not None else None
            pristine = [_clone(v) if _type(v) is _Tensor else v for v in inputs]
            if msg.get("poison") is not None:
                poison_allocator(self.device, float(msg["poison"]), int(msg.get("poison_bytes", 0)))
            with torch.no_grad():
                out = self.model(*inputs)
            if self.device.startswith("cuda"):
                _sync()
            del earlier
        except BaseException as exc:
            return {"ok": False, "phase": "forward", "error": _loop_module.short_exception(exc)}
        reply: dict[str, Any] = {"plain": _type(out) is _Tensor, "out_type": _type(out).__name__}
        reply["inputs_unchanged"] = all(
            _equal(after, before) for after, before in zip(_tensors(inputs), _tensors(pristine), strict=True)
        )
        if reply["plain"]:
            reply["alias"] = _overlaps(out, inputs)
            nbytes = out.numel() * out.element_size()
            if nbytes > int(msg["max_output_bytes"]):
                return {**reply, "ok": False, "phase": "forward", "error": f"output of {nbytes} bytes is too large"}
            reply["desc"] = self._publish(out, msg["out_path"])
        return reply

    def _refill(self, inputs: list[Any], msg: dict[str, Any]) -> Any:
        """Call the kernel on `inputs`, then refill the same tensors in place with `refill_seed`'s values; returns
        the call's output, which the caller keeps alive until its own call is done (so its memory is not reused)."""
        with torch.no_grad():
            earlier = self.model(*inputs)
            if self.device.startswith("cuda"):
                _sync()
            fresh_values = _tensors(self._inputs(msg["refill_seed"], msg["scale"]))
            for tensor, fresh in zip(_tensors(inputs), fresh_values, strict=True):
                _copy(tensor, fresh)
        _set_precision(False)  # whatever the first call set: the published call runs under full FP32 too
        return earlier

    def timing_setup(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.flusher = flusher_before_sets(self.device)
        self.lead = LaunchLead(self.device, float(msg.get("lead_us", 0.0)))
        self.sets = [self._inputs(seed) for seed in msg["seeds"]]
        self.task_base = None
        self._block(int(msg["warmup"]), 0, None)
        self.task_base = len(_listdir("/proc/self/task"))  # after warm-up: thread pools exist by now
        return {}

    def _quiesce(self) -> None:
        """CPU stand-in for a device-wide synchronize: wait (at most 1 s) until threads that the call started have
        ended, so work handed to a background thread (A2) lands inside the timed call."""
        if self.task_base is None:
            return
        deadline = _clock_ns() + 1_000_000_000
        while len(_listdir("/proc/self/task")) > self.task_base:
            if _clock_ns() > deadline:
                self.task_base = len(_listdir("/proc/self/task"))  # a persistent new thread: wait for it once only
                return
            _sleep(0.0001)

    def _block(
        self, n: int, offset: int, keep: dict[int, Any] | None, paper: bool = False, host: list[float] | None = None
    ) -> tuple[list[float], list[float]]:
        cuda = self.device.startswith("cuda")
        _set_precision(True)  # timing under the verified (TF32) baseline's flags, as the baseline is timed
        self.flags_seen["timing"] = _precision_flags()
        with torch.no_grad():
            return time_calls(
                self.model,
                self.sets[:1] if paper else self.sets,  # KernelBench's loop: one input set, no flush
                n,
                offset,
                cuda=cuda,
                flush=_no_flush if paper else self.flusher,  # type: ignore[arg-type]
                clock_ns=_clock_ns,
                event_cls=_Event if cuda else None,
                synchronize=_sync if cuda else self._quiesce,
                keep=keep,
                lead=None if paper else self.lead,
                host=host,
            )

    def time_block(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Time one block. Outputs are always kept (one random call per input set); the orchestrator decides only
        after the block whether to re-check them (save_kept), so the kernel cannot behave differently when watched."""
        if msg.get("paper"):  # the comparison loop: nothing kept, nothing re-checked, never a verdict
            times, walls = self._block(int(msg["n"]), 0, None, paper=True)
            return {"times": times, "walls": walls}
        self.kept = {}
        host: list[float] = []
        times, walls = self._block(int(msg["n"]), int(msg["offset"]), self.kept, host=host)
        return {"times": times, "walls": walls, "host": host}

    def time_fresh(self, msg: dict[str, Any]) -> dict[str, Any]:
        """One timed call on each never-seen input set; outputs published for the re-check (fresh-input probe)."""
        times, walls, saved = [], [], {}
        for offset, (seed, path) in enumerate(zip(msg["seeds"], msg["paths"], strict=True)):
            inputs = self._inputs(seed)
            kept: dict[int, Any] = {}
            self._block(1, offset, None)  # untimed: wake thread pools and clocks after the idle gap, as in a block
            sets, self.sets = self.sets, [inputs]
            try:
                t, w = self._block(1, 0, kept)
            finally:
                self.sets = sets
            times += t
            walls += w
            out = kept.get(0)
            index = str(int(msg["start"]) + offset)
            saved[index] = self._publish(out, path) if _type(out) is _Tensor else None
        return {"times": times, "walls": walls, "saved": saved}

    def save_kept(self, msg: dict[str, Any]) -> dict[str, Any]:
        saved: dict[str, dict[str, Any] | None] = {}
        for index, out in self.kept.items():
            saved[str(index)] = None
            if _type(out) is _Tensor:
                saved[str(index)] = self._publish(out, msg["paths"][str(index)])
        self.kept = {}
        return {"saved": saved}

    def memory(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Peak bytes of one forward (TF32 flags), counted by counters bound before the kernel was imported."""
        _set_precision(True)
        return {"peak": peak_bytes(self.model, self.sets[0], self.device)}

    def launched_kernels(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The device kernels of one call on the first timing set (TF32 flags), outside the timed calls."""
        set_precision(True)
        return {"events": profile_call(lambda: self.model(*self.sets[0]), self.device, msg.get("trace_path"))}

    def integrity(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Which watched functions were replaced, and which Python threads the kernel left running."""
        tampered = _replaced_functions()
        tampered += [f"candidate_worker.{name}" for name, value in _OWN_GLOBALS if globals().get(name) is not value]
        threads, native = _new_threads()
        native_at_start = tamper_watch.NATIVE_AT_START
        return {
            "tampered": tampered,
            "threads": threads,
            "native_threads": native,
            "native_at_start": native_at_start,
            "precision_flags": self.flags_seen,
        }


# This module's own captured references (`_clock_ns`, `_detach`, ...): a kernel can rebind them through
# sys.modules["__main__"], so they are compared too (the orchestrator's clock remains the real guard).
_OWN_GLOBALS = tuple((k, v) for k, v in globals().items() if k.startswith("_") and k[1:2] != "_" and callable(v))


def main() -> None:
    state = Candidate()
    serve(
        {
            Command.WARM_UP: warm_up,
            Command.LOAD: watched(state.load),
            Command.LOAD_PARAMS: state.load_params,
            Command.RUN: watched(state.run),
            Command.TIMING_SETUP: watched(state.timing_setup),
            Command.TIME_BLOCK: state.time_block,
            Command.SAVE_KEPT: state.save_kept,
            Command.TIME_FRESH: state.time_fresh,
            Command.MEMORY: state.memory,
            Command.LAUNCHED_KERNELS: state.launched_kernels,
            Command.INTEGRITY: state.integrity,
            Command.SET_PROBLEM: state.set_problem,
            Command.EXTENSIONS_DIR: state.extensions_dir,
            Command.PROBE_HANDOVER: state.probe_handover,
            Command.USE_HANDOVER: state.use_handover,
            Command.RELEASE: state.release,
        }
    )


if __name__ == "__main__":
    main()
