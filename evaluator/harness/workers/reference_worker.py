"""The clean worker: builds the reference Model, generates inputs from secret seeds, computes reference outputs in
full fp32, compares candidate outputs, and times the baselines. It never imports candidate code.

Run as `python -m evaluator.harness.workers.reference_worker CMD_FD REPLY_FD LIMITS_JSON` by the orchestrator only.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    from evaluator.harness.sandbox.limits import apply_limits

    apply_limits(json.loads(sys.argv[3]), dumpable=False)

import torch

from evaluator.harness.commands import Command
from evaluator.harness.protocol import VERIFIED_TOLERANCE
from evaluator.harness.timing import time_calls
from evaluator.harness.workers.command_loop import serve, short_exception
from evaluator.harness.workers.compare import compare_outputs, nonfinite, under_tf32
from evaluator.harness.workers.cuda_fd import Importer
from evaluator.harness.workers.device import device_info, device_memory, precision_flags, set_precision, sync, warm_up
from evaluator.harness.workers.flops import count_namespace
from evaluator.harness.workers.handover import DTYPES, load_untrusted_file, open_cuda
from evaluator.harness.workers.inputs import clone_all, load_problem, make_inputs, tensor_bytes
from evaluator.harness.workers.l2 import L2Flusher, flusher_before_sets, no_flush
from evaluator.harness.workers.lead import LaunchLead
from evaluator.harness.workers.memory import peak_bytes, raising
from evaluator.harness.workers.profiling import profile_call


class Reference:
    """State of the clean side for one evaluation."""

    def __init__(self) -> None:
        self.ns: dict[str, Any] = {}
        self.init: list[Any] = []
        self.surveyed: dict[str, Any] = {}  # survey()'s reply: setup() gives it again
        self.model: torch.nn.Module | None = None
        self.device = "cpu"
        self.refs: dict[str, torch.Tensor] = {}
        self.first_ref: torch.Tensor | None = None
        self.constant = True
        self.ref_count = 0
        self.sets: list[list[Any]] = []
        self.recheck_refs: dict[int, torch.Tensor] = {}
        self.recheck_refs_tf32: dict[int, torch.Tensor] = {}  # fresh sets: the TF32 baseline's own output
        self.compiled: Any = None
        self.flusher: L2Flusher | None = None
        self.lead: LaunchLead | None = None
        self.importer: Importer | None = None  # the candidate's shared output buffer (cuda_fd hand-over)
        # The precision flags read back right before this side's calls, per phase (the record's environment).
        self.flags_seen: dict[str, dict[str, Any]] = {}

    # --- setup and correctness -------------------------------------------------------------------------------

    def survey(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The problem loaded, its init inputs saved, and one forward counted on the meta device (flops.py: FLOPs
        and bytes for the speed of light, the parameters and footprint the memory declaration needs), all before
        this worker touches the GPU: the evaluation's memory is admitted from these figures."""
        self.ns = load_problem(Path(msg["problem_path"]).read_text())
        self.init = list(self.ns["get_init_inputs"]())
        torch.save(self.init, msg["init_path"])
        counts = count_namespace(self.ns, self.init)
        footprint = None if counts is None else counts["input_bytes"] + counts["output_bytes"]
        self.surveyed = {"footprint_bytes": footprint, "counts": counts}
        return self.surveyed

    def setup(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.device = msg["device"]
        if self.device.startswith("cuda"):
            torch.cuda.set_device(0)
            torch.cuda.set_per_process_memory_fraction(float(msg["gpu_memory_fraction"]))
        if not self.surveyed:  # a later pair's fresh worker
            self.survey(msg)
        self.model = self._build(self.init)
        set_precision(False)
        return {"info": device_info(self.device), "flags": precision_flags(), **self.surveyed}

    def _build(self, init: list[Any]) -> torch.nn.Module:
        torch.manual_seed(42)  # KernelBench convention: seed 42 before each construction
        model: torch.nn.Module = self.ns["Model"](*init)
        return model.to(self.device)

    def _inputs(self, seed: int, scale: float | str) -> list[Any]:
        return make_inputs(self.ns, seed, scale, self.device)

    def _forward(self, inputs: list[Any], *, keep_inputs: bool = True, tf32: bool = False) -> torch.Tensor:
        set_precision(tf32)  # the reference for correctness is full fp32 (TF32 only for re-checking timed outputs)
        assert self.model is not None
        with torch.no_grad():
            out = self.model(*(clone_all(inputs) if keep_inputs else inputs))
        sync(self.device)
        if type(out) is not torch.Tensor:
            raise TypeError(f"reference returned {type(out).__name__}, not a tensor")
        return out.detach()

    def make_trial(self, msg: dict[str, Any]) -> dict[str, Any]:
        inputs = self._inputs(int(msg["seed"]), msg["scale"])
        try:
            ref = self._forward(inputs)
        except Exception as exc:  # the distribution is skipped, with the reason
            return {"skipped": f"reference raised: {short_exception(exc, 400)}"}
        self.flags_seen["correctness"] = precision_flags()  # as _forward set them
        if nonfinite(ref):
            return {"skipped": "reference output has NaN/Inf"}
        self.refs[msg["key"]] = ref
        if msg.get("track_constant", True):
            if self.first_ref is None:
                self.first_ref = ref.clone()
            elif not torch.equal(ref, self.first_ref):
                self.constant = False
            self.ref_count += 1
        return {"skipped": None, "output_bytes": tensor_bytes(ref), "input_bytes": tensor_bytes(inputs)}

    def compare(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The candidate's output against the stored reference; with `again`, also the determinism pair (the same
        inputs run twice, the allocator poisoned with NaN then 0); with `previous` (the key of the reference for the
        inputs' previous contents: refilled inputs), whether a miss is that reference's result instead (`stale`).
        Without an output it only drops the references."""
        ref = self.refs.pop(msg["key"])
        previous = self.refs.pop(msg["previous"]) if msg.get("previous") else None
        if msg.get("output") is None:
            return {"passed": False, "plain": False, "reason": "no output to compare"}
        out, failure = self._receive(msg["output"])
        if failure:
            return failure
        result = compare_outputs(out, ref, float(msg["tol"]))
        if previous is not None and not result["passed"]:
            result["stale"] = bool(compare_outputs(out, previous, float(msg["tol"]))["passed"])
        if "again" in msg:
            if msg["again"] is None:
                result["determinism"] = {"passed": False, "reason": "the second run returned no plain tensor"}
            elif type(out) is torch.Tensor:
                result["determinism"] = self._compare_output(msg["again"], out, VERIFIED_TOLERANCE)
            else:
                result["determinism"] = {"passed": False, "reason": "output is not a plain tensor"}
        return result

    def _receive(self, output: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        """The candidate's output, by the hand-over its worker used (see handover.py), or the failed comparison
        that stands for it when it cannot be read."""
        desc = output.get("desc") or {}
        try:
            if desc.get("kind") == "cuda_fd" and self.importer is not None:
                return self.importer.read(desc, DTYPES), None
            if desc.get("kind") == "cuda_ipc":
                return open_cuda(desc, self.device), None
            return load_untrusted_file(output["path"], self.device), None
        except Exception as exc:  # a subclass, code in a pickle, a forged handle: not a plain tensor
            return None, {"passed": False, "plain": False, "reason": f"output is not a plain tensor: {exc}"[:300]}

    def _compare_output(self, output: dict[str, Any], ref: torch.Tensor, tol: float) -> dict[str, Any]:
        out, failure = self._receive(output)
        return failure or compare_outputs(out, ref, tol)

    def probe_handover(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Can this process open the candidate's CUDA IPC handles? (Not across Unix users or some containers.)"""
        try:
            desc = msg["desc"] or {}
            if desc.get("kind") == "cuda_fd":
                sock = socket.socket(fileno=int(msg["fd_socket"]))
                self.importer = Importer(sock, torch.cuda.current_device())
                got = self.importer.read(desc, DTYPES)
            else:
                got = open_cuda(desc, self.device)
        except Exception as exc:  # the answer is "no", with the reason
            return {"opened": False, "reason": short_exception(exc, 300)}
        same = bool(torch.equal(got, torch.arange(got.numel(), dtype=got.dtype, device=got.device)))
        return {"opened": same, "reason": None if same else "probe values differ"}

    def constant_state(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.first_ref = None  # not needed after correctness; frees device memory before timing
        self.refs.clear()
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()  # give cached blocks back while this evaluation queues for the timing lock
        return {"constant": self.constant if self.ref_count >= 2 else None, "count": self.ref_count}

    def randomise(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Give matching float parameters and buffers new random values (secret seed); save them for the candidate."""
        assert self.model is not None
        wanted = {name: (tuple(shape), dtype) for name, shape, dtype in msg["entries"]}
        state = self.model.state_dict()
        floats = {n: t for n, t in state.items() if isinstance(t, torch.Tensor) and t.is_floating_point()}
        rename = match_entries({n: (tuple(t.shape), str(t.dtype)) for n, t in floats.items()}, wanted)
        matched = list(rename)
        missing = [n for n in floats if n not in rename]
        generator = torch.Generator(device=self.device).manual_seed(int(msg["seed"]))  # generated on the device
        # Every float entry of the reference is randomised, matched or not: a kernel without some parameter (B11,
        # e.g. no LayerNorm affine at all) can then only pass by being right for any value of it, not the default.
        new_values = {name: _random_like(t, generator) for name, t in floats.items()}
        with torch.no_grad():
            for name, value in new_values.items():
                floats[name].copy_(value.to(floats[name].device))
        torch.save({rename[name]: new_values[name] for name in matched}, msg["out_path"])
        return {"matched": matched, "missing": missing, "total": len(floats)}

    # --- timing ----------------------------------------------------------------------------------------------

    def timing_setup(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.flusher = flusher_before_sets(self.device)
        self.lead = LaunchLead(self.device, float(msg.get("lead_us", 0.0)))
        self.sets = []
        self.recheck_refs = {}
        self.recheck_refs_tf32 = {}
        for index, seed in enumerate(msg["seeds"]):
            inputs = self._inputs(int(seed), 1.0)
            self.recheck_refs[index] = self._forward(inputs)
            self.sets.append(inputs)
        reply: dict[str, Any] = {"flush": self.flusher.detail, "lead": self.lead.detail, "compile_error": None}
        for tf32 in (True, False):
            self._run_block(self.model, tf32, int(msg["warmup"]), 0)
        if msg.get("compile"):
            try:
                set_precision(True)
                self.compiled = torch.compile(self.model)
                self._run_block(self.compiled, True, max(int(msg["warmup"]), 3), 0)
            except Exception as exc:  # the compile baseline is optional
                self.compiled = None
                reply["compile_error"] = short_exception(exc, 500)
        return reply

    def _run_block(
        self,
        fn: Any,
        tf32: bool,
        n: int,
        offset: int,
        paper: bool = False,
        keep: dict[int, Any] | None = None,
        host: list[float] | None = None,
    ) -> tuple[list[float], list[float]]:
        set_precision(tf32)
        self.flags_seen["timing" if tf32 else "timing_fp32"] = precision_flags()
        assert self.flusher is not None
        cuda = self.device.startswith("cuda")
        with torch.no_grad():
            return time_calls(
                fn,
                self.sets[:1] if paper else self.sets,  # KernelBench's loop: one input set, no flush
                n,
                offset,
                cuda=cuda,
                flush=no_flush if paper else self.flusher,
                clock_ns=__import__("time").perf_counter_ns,
                event_cls=torch.cuda.Event if cuda else None,
                synchronize=torch.cuda.synchronize if cuda else None,
                keep=keep,
                lead=None if paper else self.lead,
                host=host,
            )

    def time_block(self, msg: dict[str, Any]) -> dict[str, Any]:
        mode = msg["mode"]
        fn = self.compiled if mode == "compile" else self.model
        host: list[float] = []
        times, walls = self._run_block(
            fn, mode != "fp32", int(msg["n"]), int(msg["offset"]), bool(msg.get("paper")), host=host
        )
        return {"times": times, "walls": walls, "host": host}

    def memory(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Peak bytes allocated during one forward (TF32 flags), counted from what inputs and weights already hold."""
        set_precision(True)
        assert self.model is not None
        return {"peak": peak_bytes(self.model, self.sets[0], self.device)}

    def launched_kernels(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The device kernels of one TF32-baseline call on the first timing set, outside the timed calls."""
        set_precision(True)
        model = self.model
        assert model is not None
        return {"events": profile_call(lambda: model(*self.sets[0]), self.device, msg.get("trace_path"))}

    def fresh_sets(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Input sets the candidate has never seen (the fresh-input timing probe), with their references."""
        times: list[float] = []
        for offset, seed in enumerate(msg["seeds"]):
            inputs = self._inputs(int(seed), 1.0)
            # No defensive clone: these inputs serve one paired baseline call and are dropped (device memory on
            # 6.4 GB problems).
            self.recheck_refs[int(msg["start"]) + offset] = self._forward(inputs, keep_inputs=False)
            # The baseline on the same new inputs, moments before the candidate's calls: a paired comparison that
            # load drift on a shared machine cannot skew (warm call first, as on the candidate side).
            sets, self.sets = self.sets, [inputs]
            kept: dict[int, Any] = {}
            try:
                self._run_block(self.model, True, 1, 0)
                times += self._run_block(self.model, True, 1, 0, keep=kept)[0]
            finally:
                self.sets = sets
            if type(kept.get(0)) is torch.Tensor:  # the TF32 baseline's output: the re-check's second reference
                self.recheck_refs_tf32[int(msg["start"]) + offset] = kept[0].detach()
        return {"times": times}

    def recheck(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Timed outputs against the fp32 references of their input sets, by the gate's own rule (compare_outputs,
        at the gate's tolerance); fresh-set references are used once. The orchestrator tells a precision-sized miss
        (`incorrect`) from one beyond precision (evidence: protocol.miss_kind) from the figures returned here.

        Timed calls run under the TF32 flags, as the baseline's do, so a kernel built from torch operators computes
        its timed outputs in TF32 where the baseline does: an output that misses the fp32 reference is also held
        against the baseline's TF32 output on the same inputs (kept for the fresh sets, computed again for the
        rotating ones, whose inputs are kept). See under_tf32."""
        results = {}
        tol = float(msg["tol"])
        for index, output in msg["outputs"].items():
            i = int(index)
            ref = self.recheck_refs[i]
            tf32_ref = self.recheck_refs_tf32.pop(i, None)
            if i >= int(msg["fresh_start"]):
                self.recheck_refs.pop(i)
            out, failure = self._receive(output)
            result = failure or compare_outputs(out, ref, tol)
            if not result.get("passed") and result.get("plain") and result.get("shape_dtype"):
                if tf32_ref is None and i < len(self.sets):
                    tf32_ref = self._forward(self.sets[i], tf32=True)
                if tf32_ref is not None:
                    result = under_tf32(result, out, ref, tf32_ref, tol)
            del out, ref, tf32_ref
            results[index] = result
        return {"results": results}

    def precision_flags(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"flags": self.flags_seen}


def match_entries(
    reference: dict[str, tuple[tuple[int, ...], str]], candidate: dict[str, tuple[tuple[int, ...], str]]
) -> dict[str, str]:
    """Reference entry name -> ModelNew entry name. Same name and shape first; the rest in creation order by shape
    (the seed-42 convention already relies on creation order), skipping ModelNew's extra entries, so renaming or
    adding a parameter cannot dodge randomisation (B11)."""
    rename = {n: n for n, sig in reference.items() if candidate.get(n) == sig}
    free = [c for c in candidate if c not in rename.values()]
    j = 0
    for name, sig in reference.items():
        if name in rename:
            continue
        while j < len(free) and candidate[free[j]] != sig:
            j += 1
        if j < len(free):
            rename[name] = free[j]
            j += 1
    return rename


def _random_like(tensor: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A random tensor on the scale of `tensor`: norm-layer ones stay positive, zeros get a spread, others resampled.

    Keeps running variances positive and magnitudes plausible, so the problem stays well-conditioned.
    """
    t = tensor.detach().float()
    if t.numel() == 0:
        return tensor.detach().clone()
    shape, device = tuple(t.shape), t.device
    if bool((t == 0).all()):
        new = torch.randn(shape, generator=generator, device=device) * 0.5
    elif bool((t >= 0).all()):
        new = float(t.abs().mean()) * (0.5 + torch.rand(shape, generator=generator, device=device))
    else:
        std = float(t.std()) if t.numel() > 1 else float(t.abs().mean())
        new = float(t.mean()) + std * torch.randn(shape, generator=generator, device=device)
    return new.to(tensor.dtype)


def main() -> None:
    state = Reference()
    # each noting what it raised the allocator's reserved peak to (the record's gpu_hold)
    handlers = {
        Command.WARM_UP: warm_up,
        Command.SURVEY: state.survey,
        Command.SETUP: state.setup,
        Command.MAKE_TRIAL: state.make_trial,
        Command.COMPARE: state.compare,
        Command.CONSTANT: state.constant_state,
        Command.RANDOMISE: state.randomise,
        Command.TIMING_SETUP: state.timing_setup,
        Command.TIME_BLOCK: state.time_block,
        Command.MEMORY: state.memory,
        Command.LAUNCHED_KERNELS: state.launched_kernels,
        Command.RECHECK: state.recheck,
        Command.FRESH_SETS: state.fresh_sets,
        Command.PROBE_HANDOVER: state.probe_handover,
        Command.PRECISION_FLAGS: state.precision_flags,
        Command.DEVICE_MEMORY: device_memory,
    }
    serve({cmd: raising(cmd.value, handler) for cmd, handler in handlers.items()})


if __name__ == "__main__":
    main()
