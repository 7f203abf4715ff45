"""Evaluations share a GPU by memory (evaluator/harness/gpu_memory.py, orchestrator/gpu_holds.py): those whose
declared footprints fit run side by side; one that does not fit waits until it does, and its record says what it
waited for. Runs on CPU: the ledger is flocked files, and the harness admits CPU evaluations too when a budget is
set (gpu_memory_budget_mb)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evaluator.harness.gpu_memory import MemoryLedger, MemoryTimeout
from evaluator.harness.orchestrator.declared_memory import CUDA_WORKER_BYTES, FLUSH_BYTES, reservation_bytes
from evaluator.harness.protocol import COMPARE_CHUNK_ELEMENTS

REPO = Path(__file__).resolve().parents[2]
MB = 1 << 20
HOLD = """
import sys, time
from evaluator.harness.gpu_memory import MemoryLedger
directory, mb, seconds, log, name = sys.argv[1:]
with MemoryLedger(directory, "GPU-test").reserve(int(mb) << 20, 100 << 20, time.monotonic() + 30) as admission:
    with open(log, "a") as fh:
        fh.write(f"{time.monotonic():.4f} start {name} {admission.waited_s}\\n")
    time.sleep(float(seconds))
    with open(log, "a") as fh:
        fh.write(f"{time.monotonic():.4f} end {name} 0\\n")
"""


def _start(directory: Path, mb: int, seconds: float, log: Path, name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(directory), str(mb), str(seconds), str(log), name], cwd=REPO
    )


def _spans(log: Path) -> dict[str, tuple[float, float, float]]:
    got: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        stamp, _, name, waited = line.split()
        got.setdefault(name, []).extend([float(stamp)] if got.get(name) else [float(stamp), float(waited)])
    return {k: (v[0], v[2], v[1]) for k, v in got.items()}  # start, end, waited


def test_evaluations_that_fit_share_and_one_that_does_not_waits(tmp_path):
    log = tmp_path / "log"
    a = _start(tmp_path, 40, 1.5, log, "a")
    b = _start(tmp_path, 40, 1.5, log, "b")
    time.sleep(0.5)
    c = _start(tmp_path, 40, 0.2, log, "c")  # 40 + 40 + 40 > 100: waits for one of the first two
    for proc in (a, b, c):
        assert proc.wait(30) == 0
    spans = _spans(log)
    assert spans["a"][0] < spans["b"][1] and spans["b"][0] < spans["a"][1]  # side by side
    assert spans["c"][0] >= min(spans["a"][1], spans["b"][1])  # admitted once one of them was gone
    assert spans["c"][2] > 0 and spans["a"][2] == 0


def test_a_holder_that_dies_frees_its_memory(tmp_path):
    log = tmp_path / "log"
    holder = _start(tmp_path, 90, 60, log, "dead")
    deadline = time.monotonic() + 20
    while not (log.exists() and "start dead" in log.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    ledger = MemoryLedger(tmp_path, "GPU-test")
    with ledger.reserve(90 * MB, 100 * MB, time.monotonic() + 5) as admission:
        assert admission.reserved_bytes == 90 * MB  # the dead holder's reservation was found stale and removed
    assert not [p for p in ledger.folder.iterdir() if p.name.startswith("r-")]


def test_waiting_past_the_deadline_says_what_did_not_fit(tmp_path):
    ledger = MemoryLedger(tmp_path, "GPU-test")
    with ledger.reserve(80 * MB, 100 * MB, time.monotonic() + 5):
        with pytest.raises(MemoryTimeout, match="did not fit"):
            with ledger.reserve(30 * MB, 100 * MB, time.monotonic() + 0.3):
                pass
        # what fits beside it is admitted at once
        with ledger.reserve(20 * MB, 100 * MB, time.monotonic() + 0.3) as admission:
            assert admission.waited_s == 0 and admission.describe() == "admitted at once"


def test_more_than_the_device_waits_until_it_is_alone_then_runs(tmp_path):
    ledger = MemoryLedger(tmp_path, "GPU-test")
    release = threading.Event()

    def small() -> None:
        with MemoryLedger(tmp_path, "GPU-test").reserve(10 * MB, 100 * MB, time.monotonic() + 5):
            release.wait(5)

    thread = threading.Thread(target=small)
    thread.start()
    time.sleep(0.2)
    threading.Timer(0.5, release.set).start()
    with ledger.reserve(500 * MB, 100 * MB, time.monotonic() + 5) as admission:
        assert admission.reserved_bytes == 100 * MB and admission.waited_s > 0
        assert "1 other evaluations held 0.0 of 0.1 GiB" in admission.describe()
    thread.join()


@pytest.mark.parametrize("patience_s", [0.3, math.inf])
def test_a_declaration_waiting_past_the_patience_is_not_passed_by_later_ones(tmp_path, patience_s):
    """A whole-device declaration waits for the device to be empty; small ones that fit pass it, so a stream of
    them would starve it (L1/36 waited out its 330 s that way on the H200). Past the patience, a later small one
    waits behind it; with no patience (math.inf, the rule before) it is admitted at once."""
    admitted: dict[str, float] = {}
    described: dict[str, str] = {}
    release_small = threading.Event()

    def hold(name: str, mb: int, until: threading.Event | float) -> None:
        ledger = MemoryLedger(tmp_path, "GPU-test")
        with ledger.reserve(mb * MB, 100 * MB, time.monotonic() + 20, patience_s) as admission:
            admitted[name], described[name] = time.monotonic(), admission.describe()
            until.wait(20) if isinstance(until, threading.Event) else time.sleep(until)

    small = threading.Thread(target=hold, args=("small", 10, release_small))
    small.start()
    while "small" not in admitted:
        time.sleep(0.01)
    whole = threading.Thread(target=hold, args=("whole", 100, 0.3))
    whole.start()
    time.sleep(0.6)  # the whole-device declaration has waited past a patience of 0.3 s
    later = threading.Thread(target=hold, args=("later", 10, 0.0))
    later.start()
    time.sleep(0.5)
    if math.isinf(patience_s):
        assert "later" in admitted and "whole" not in admitted  # it fitted beside the small one and passed
    else:
        assert "later" not in admitted  # it fits beside the small one, but waits behind the whole-device one
    release_small.set()
    for thread in (small, whole, later):
        thread.join(30)
    if math.isinf(patience_s):
        return
    assert admitted["whole"] < admitted["later"]
    assert "held back behind an evaluation that had waited longer" in described["later"], described["later"]
    assert "held back" not in described["whole"]


def test_the_declared_footprint():
    capacity = 100 << 30
    gib = 1 << 30

    def declare(footprint, peak=0, output=0, params=0, cuda=True, **kw):
        return reservation_bytes(footprint=footprint, peak_bytes=peak, input_sets=3, capacity=capacity, cuda=cuda,
                                 output_bytes=output, param_bytes=params, **kw)  # fmt: skip

    # unknown sizes: the whole device, so the evaluation runs beside nothing else
    assert declare(None) == capacity
    # two workers, each at its timing set-up: warm-ups in two precisions (one forward's peak with its margin, and
    # one more) beside three sets; on a GPU also a context and the L2 flush buffer each
    assert declare(gib, cuda=False) == 2 * (1.25 + 1 + 3) * gib
    assert declare(gib) == declare(gib, cuda=False) + 2 * (CUDA_WORKER_BYTES + FLUSH_BYTES)
    # output-heavy (KernelBench L1/77: 0.03 GiB in, 0.53 out): the re-checks hold most, the fresh sets' two
    # references each, the output received and the comparison's chunks (up to 13x the output on an H100 with the
    # 512 MiB chunks of before)
    out = gib // 2
    chunk = COMPARE_CHUNK_ELEMENTS * 4
    recheck = 1.25 * (3 * (out + MB) + 3 * out + 5 * chunk)  # one fresh set at a time above 1 GiB per round
    assert declare(out + MB, peak=out + MB, output=out, cuda=False) == 2 * int(recheck)
    assert declare(out + MB, peak=out + MB, output=out, cuda=False) > declare(out + MB, peak=out + MB, cuda=False)
    # a network's parameters given new values: a second copy beside a forward
    assert declare(MB, peak=gib, params=2 * gib, cuda=False) == 2 * int(1.25 * gib + 4 * gib)
    # a small input whose forward holds a large intermediate (KernelBench L3/31: 32 MB in and out, a 16 GB peak)
    assert declare(32 << 20, peak=16 * gib) > 2 * 16 * gib
    assert declare(1 << 40) == capacity
    assert declare(None, declared_mb=512) == 512 * MB


def test_the_meta_forward_counts_the_intermediate_peak():
    """flops.PeakBytes on the meta device: what one forward holds at once, not only its input and output."""
    from evaluator.harness.workers.flops import count_source

    source = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        scores = x @ x.transpose(-1, -2)          # (8, 2048, 2048): 128 MiB, freed before the output
        return (scores.softmax(-1) @ x).sum(-1)
def get_inputs():
    return [torch.rand(8, 2048, 64)]
def get_init_inputs():
    return []
"""
    counts = count_source(source)
    assert counts is not None
    small = counts["input_bytes"] + counts["output_bytes"]
    assert small < 5 * MB and counts["peak_bytes"] >= 2 * 128 * MB  # the scores and their softmax at once


@pytest.mark.slow
def test_an_evaluation_that_does_not_fit_waits_and_its_record_says_so(evaluate, tmp_path):
    """The real harness on CPU with a 100 MB budget: while 80 MB are held elsewhere, an evaluation declaring 40 MB
    waits until they are given back; one declaring 20 MB is admitted beside them at once."""
    locks = tmp_path / "locks"
    budget = {"gpu_lock_dir": str(locks), "gpu_memory_budget_mb": 100}
    fits = evaluate("linear_bn", "linear_bn_correct", gpu_memory_reserve_mb=20, **budget)
    assert fits["environment"]["gpu_hold"]["waited_s"] == 0
    held = threading.Event()
    ledger = MemoryLedger(locks, "cpu")

    def other_evaluation() -> None:
        """Holds 80 MB until an evaluation waits for memory, then a moment longer."""
        with ledger.reserve(80 * MB, 100 * MB, time.monotonic() + 30):
            held.set()
            deadline = time.monotonic() + 240
            while not ledger.waiting() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)

    thread = threading.Thread(target=other_evaluation)
    thread.start()
    assert held.wait(10)
    beside = evaluate("linear_bn", "linear_bn_correct", gpu_memory_reserve_mb=20, **budget)
    assert thread.is_alive()  # nobody waited: the 80 MB are still held
    waits = evaluate("linear_bn", "linear_bn_correct", gpu_memory_reserve_mb=40, **budget)
    thread.join()
    assert beside["status"] == waits["status"] == "ok", (beside["error"], waits["error"])
    assert beside["environment"]["gpu_hold"]["waited_s"] == 0
    hold = waits["environment"]["gpu_hold"]
    assert hold["reserved_bytes"] == 40 * MB and hold["capacity_bytes"] == 100 * MB
    assert hold["waited_s"] > 0 and "1 other evaluations held 0.1 of 0.1 GiB" in hold["waited_for"]
    assert waits["phases"]["gpu_memory_wait"] == hold["waited_s"]


def test_running_out_of_memory_beside_others_is_not_the_kernels_verdict(tmp_path):
    """A kernel that runs out of device memory while other evaluations hold memory on the GPU is evaluated again
    (an infrastructure error), not judged; alone on the device, running out is its own."""
    from evaluator.harness.orchestrator.evaluation import EvaluationRun
    from evaluator.harness.protocol import Spec

    spec = Spec(
        problem_path="", kernel_path="", device="cpu", work_dir=str(tmp_path / "work"),
        options={"gpu_lock_dir": str(tmp_path), "gpu_memory_budget_mb": 100, "gpu_memory_reserve_mb": 30},
    )  # fmt: skip
    holds = EvaluationRun(spec, lambda event: None).gpu
    oom = "timing_setup failed: OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB"
    with holds.memory(dict):
        holds.declare()
        assert holds.crowded_out(oom) == ""  # alone
        with MemoryLedger(tmp_path, "cpu").reserve(40 * MB, 100 * MB, time.monotonic() + 5):
            reason = holds.crowded_out(oom)
            assert "1 other evaluations held 0.0 GiB" in reason and "evaluated again" in reason
            assert holds.crowded_out("run failed: RuntimeError: shape mismatch") == ""
            # the reference worker's reading of the device (never the kernel's) says whether it was full
            reading = {"free_bytes": 3 * 2**30, "total_bytes": 80 * 2**30, "reserved_bytes": 2**30}
            assert "(3.0 of the device's 80.0 GiB free just after, by the driver's count)" in holds.crowded_out(
                oom, reading
            )
            assert "beside it; evaluated again, not judged" in holds.crowded_out(oom, {})  # no context
            # torch's own account, as the kernel's worker gave it, quoted as such
            assert reason.endswith("(the kernel's worker reported: Tried to allocate 8.00 GiB)"), reason
            assert holds.crowded_out(oom, {}) == reason  # no reading (the reader gone): still not judged
    assert holds.crowded_out(oom) == ""  # no memory held: nothing shared


def test_running_out_of_memory_on_a_device_too_small_for_the_problem_is_not_the_kernels_verdict(tmp_path):
    """On an 80 GB H100 an honest kernel for L1/19 (6.4 GB tensors) ran out of memory alone beside its reference
    worker and was judged `runtime_error`: the problem's own estimate (from the reference, never the kernel) was
    more than the device gives evaluations. Running out there is the device's size; where the estimate fits, alone,
    it is the kernel's."""
    from evaluator.harness.orchestrator.evaluation import EvaluationRun
    from evaluator.harness.protocol import Spec

    oom = "run failed: RuntimeError: cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY"
    for footprint_mb, judged in ((5, True), (60, False)):  # two workers x (1.25 peak + 4 sets): 52.5 vs 630 MB
        spec = Spec(
            problem_path="", kernel_path="", device="cpu", work_dir=str(tmp_path / f"work{footprint_mb}"),
            options={"gpu_lock_dir": str(tmp_path / f"locks{footprint_mb}"), "gpu_memory_budget_mb": 100},
        )  # fmt: skip
        run = EvaluationRun(spec, lambda event: None)
        run.ctx.footprint = footprint_mb * MB
        with run.gpu.memory(dict):
            run.gpu.declare()
            reason = run.gpu.crowded_out(oom)
            assert (reason == "") is judged, reason
            assert judged or ("need an estimated 0.6 GiB, more than the 0.1 GiB" in reason)
        assert run.ctx.record.environment.gpu_hold.reserved_bytes == min(100 * MB, run.gpu._estimate[0])


OOM_KERNEL = """
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)
        self.bn = torch.nn.BatchNorm1d(out_features)

    def forward(self, x):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
"""


@pytest.mark.slow
def test_an_evaluation_that_runs_out_of_memory_beside_others_is_evaluated_again(evaluate, tmp_path):
    """Through the real harness on CPU: the same out-of-memory failure is the kernel's verdict when it is alone on
    the device, and an infrastructure error (the site evaluates it again) while another evaluation holds memory."""
    from evaluator.runner import InfraError

    locks = tmp_path / "locks"
    budget = {"gpu_lock_dir": str(locks), "gpu_memory_budget_mb": 100, "gpu_memory_reserve_mb": 20}
    alone = evaluate("linear_bn", kernel_source=OOM_KERNEL, **budget)
    assert alone["status"] == "runtime_error" and "OutOfMemoryError" in alone["error"]
    with MemoryLedger(locks, "cpu").reserve(40 * MB, 100 * MB, time.monotonic() + 5):
        with pytest.raises(InfraError, match="ran out of device memory while 1 other evaluations held"):
            evaluate("linear_bn", kernel_source=OOM_KERNEL, **budget)


def test_a_cut_declaration_makes_room_at_once_and_grows_back_only_when_it_fits(tmp_path):
    """A later process pair's start cuts its evaluation's declaration to what a start holds (gpu_holds.
    declaration_cut): the room is another's at once, and growing back waits until it fits."""
    ledger = MemoryLedger(tmp_path, "GPU-test")
    other = MemoryLedger(tmp_path, "GPU-test")
    with ledger.reserve(60 * MB, 100 * MB, time.monotonic() + 5):
        with pytest.raises(MemoryTimeout):
            with other.reserve(70 * MB, 100 * MB, time.monotonic() + 0.2):
                pass
        assert ledger.resize(5 * MB, 100 * MB, time.monotonic() + 1).waited_s == 0
        assert other.others() == (1, 5 * MB)  # still there, declaring less
        released = threading.Event()
        with other.reserve(70 * MB, 100 * MB, time.monotonic() + 1) as admission:
            assert admission.waited_s == 0
            threading.Timer(0.4, released.set).start()
            with pytest.raises(MemoryTimeout, match="did not fit"):
                ledger.resize(60 * MB, 100 * MB, time.monotonic() + 0.2)
            assert other.others() == (1, 5 * MB)  # a growth that timed out keeps the smaller figure
            grown = threading.Thread(target=lambda: ledger.resize(60 * MB, 100 * MB, time.monotonic() + 5))
            grown.start()
            released.wait(5)
        grown.join()
        assert other.others() == (1, 60 * MB) and ledger.others() == (0, 0)


def test_a_whole_device_declaration_is_not_admitted_beside_a_cut_one(tmp_path):
    """On an H100 (2026-12-06), with declarations given back whole for later pairs' starts, a whole-device
    declaration was admitted while its neighbours were all starting pairs, and ran out of memory beside their fresh
    workers. Cut, not given back, a neighbour is still counted: the whole-device one waits until it has gone."""
    ledger = MemoryLedger(tmp_path, "GPU-test")
    with ledger.reserve(30 * MB, 100 * MB, time.monotonic() + 5):
        ledger.resize(1 * MB, 100 * MB, time.monotonic() + 1)  # on a GPU a start holds two CUDA contexts at least
        with pytest.raises(MemoryTimeout):
            with MemoryLedger(tmp_path, "GPU-test").reserve(100 * MB, 100 * MB, time.monotonic() + 0.3):
                pass
    with MemoryLedger(tmp_path, "GPU-test").reserve(100 * MB, 100 * MB, time.monotonic() + 0.3) as admission:
        assert admission.waited_s == 0


def test_a_start_declares_two_cuda_contexts_and_the_models_state():
    from types import SimpleNamespace

    from evaluator.harness.orchestrator.declared_memory import PEAK_MARGIN, start_bytes
    from evaluator.harness.orchestrator.gpu_holds import GpuHolds

    assert start_bytes(400 * MB, cuda=True) == int(2 * (CUDA_WORKER_BYTES + PEAK_MARGIN * 400 * MB))
    assert start_bytes(0, cuda=False) == 0
    holds = GpuHolds.__new__(GpuHolds)
    holds.ctx = SimpleNamespace(counts={"param_bytes": 400 * MB}, cuda=True)  # type: ignore[assignment]
    assert holds.start_bytes() == start_bytes(400 * MB, cuda=True)
    holds.ctx = SimpleNamespace(counts=None, cuda=False)  # type: ignore[assignment]
    assert holds.start_bytes() == 0


def test_growing_back_is_not_held_back_behind_a_whole_device_declaration_that_waits_for_it(tmp_path):
    """A whole-device declaration past its patience holds later arrivals back, but not an admitted evaluation
    growing back after a cut: the whole-device one waits for that one to end, and would wait for ever if it could
    not grow (the replay found it: 80 evaluations timed out in the full bundle)."""
    ledger = MemoryLedger(tmp_path, "GPU-test")
    got: dict[str, float] = {}

    def whole() -> None:
        with MemoryLedger(tmp_path, "GPU-test").reserve(100 * MB, 100 * MB, time.monotonic() + 10, 0.1):
            got["whole"] = time.monotonic()

    with ledger.reserve(30 * MB, 100 * MB, time.monotonic() + 5):
        ledger.resize(1 * MB, 100 * MB, time.monotonic() + 1)
        waiter = threading.Thread(target=whole)
        waiter.start()
        time.sleep(0.4)  # past its patience
        assert ledger.waiting() == 1 and "whole" not in got
        with pytest.raises(MemoryTimeout):  # a later arrival is held back behind it
            with MemoryLedger(tmp_path, "GPU-test").reserve(10 * MB, 100 * MB, time.monotonic() + 0.3, 0.1):
                pass
        assert ledger.resize(30 * MB, 100 * MB, time.monotonic() + 1).held_back_s == 0
        assert "whole" not in got
    waiter.join()
    assert "whole" in got
