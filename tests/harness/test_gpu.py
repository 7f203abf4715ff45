"""The CUDA path: events, L2 flush, peak memory, wall-clock cross-check, load_inline + compile cache.

Skipped without CUDA. Imports no Django, so it also runs on the GPU machine:
`python3 -m pytest tests/harness/test_gpu.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from evaluator.harness.protocol import get_check, validate_result  # noqa: E402
from evaluator.runner import run_evaluation  # noqa: E402

HERE = Path(__file__).resolve().parent
BENCH = HERE.parents[1] / "benchmarks"

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _run(tmp_path: Path, problem: str, kernel: str, prestart: bool = False, **options) -> dict:
    record = run_evaluation(
        problem_source=(HERE / "problems" / problem).read_text(),
        kernel_source=Path(kernel).read_text() if "/" in kernel else (HERE / "kernels" / kernel).read_text(),
        device="cuda",
        timeout=600,
        work_root=tmp_path / "work",
        compile_cache_dir=tmp_path / "cache",
        options={"quick": True, **options},
        prestart=prestart,
    )
    validate_result(record)
    return record


def test_cuda_timing_memory_and_checks(tmp_path):
    record = _run(tmp_path, "relu_large.py", "relu_correct.py")
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    timing = record["timing"]
    assert timing["method"] == "cuda_event" and timing["device_kind"] == "cuda"
    assert "MiB" in timing["l2_flush"]
    assert record["memory"]["baseline_peak_bytes"] > 0 and record["memory"]["candidate_peak_bytes"] > 0
    assert record["memory_ratio"] > 0
    # what the reference worker's allocator held at its most (cached blocks included), beside the declaration
    hold = record["environment"]["gpu_hold"]
    assert hold["reference_reserved_peak_bytes"] >= record["memory"]["baseline_peak_bytes"], hold
    # and the commands that raised it: the one that raised it highest reached it
    assert max(hold["reference_reserved_peak_by_command"].values()) == hold["reference_reserved_peak_bytes"], hold
    assert get_check(record, "wallclock_crosscheck")["passed"] is True
    assert record["environment"]["device_name"] and record["environment"]["arch"].startswith("sm_")
    env = record["environment"]
    # outputs come back on the device, never through the host: a shared buffer passed as a file descriptor crosses
    # the sandbox (its own user and namespaces), where legacy CUDA IPC handles do not
    assert env["output_handover"] == ("cuda_fd" if env["sandbox"] == "namespaces" else env["output_handover"])
    assert env["output_handover"] in ("cuda_fd", "cuda_ipc"), env["output_handover"]
    # What ran: one profiled call per side. The profiler imports torch._dynamo, which rebinds
    # torch.manual_seed: the tamper watch must know torch's own patch (on the H200 it failed every evaluation once).
    assert get_check(record, "timer_integrity")["passed"] is True
    # both workers timed on one leased CPU (cpu_pin.py), every thread of each pinned; the kernel idle meanwhile
    if len(os.sched_getaffinity(0)) > 1:
        assert timing["cpu"]["pinned"] is not None, timing["cpu"]
        assert all(p["reference"] > 0 and p["candidate"] > 0 for p in timing["cpu"]["threads_pinned"]), timing["cpu"]
    assert timing["candidate_cpu"]["during_baseline_ms"] <= 0.1 * timing["candidate_cpu"]["baseline_wall_ms"]
    ran = record["launched_kernels"]
    assert ran["candidate"]["kernels"] and ran["baseline"]["kernels"], ran
    sol = record["speed_of_light"]
    assert sol["bytes"] > 0 and (sol["fraction"] is None or 0 < sol["fraction"] <= 1.0), sol


def test_two_evaluations_share_one_gpu_through_the_lock(tmp_path):
    """Concurrent evaluations on one GPU: both verdicts hold, and the lock reports its waits."""
    from concurrent.futures import ThreadPoolExecutor

    locks = str(tmp_path / "locks")
    with ThreadPoolExecutor(2) as pool:
        records = list(
            pool.map(lambda i: _run(tmp_path, "relu_large.py", "relu_correct.py", gpu_lock_dir=locks), range(2))
        )
    assert all(r["correct"] is True and r["status"] == "ok" for r in records), [r["error"] for r in records]
    assert all("gpu_wait" in r["phases"] for r in records)
    assert all(get_check(r, "timed_output_recheck")["passed"] is True for r in records)


def test_side_stream_work_fails_the_wallclock_crosscheck(tmp_path):
    record = _run(tmp_path, "relu_large.py", "side_stream.py")
    assert record["correct"] is True  # outputs are saved after a device-wide sync
    assert get_check(record, "wallclock_crosscheck")["passed"] is False


@pytest.mark.slow  # one nvcc build (~1 min)
def test_load_inline_cuda_kernel_and_compile_cache(tmp_path):
    kernel = str(BENCH / "kernels" / "L1_19_relu_cuda.py")
    first = _run(tmp_path, "relu_large.py", kernel)
    second = _run(tmp_path, "relu_large.py", kernel)
    assert first["correct"] is True and second["correct"] is True, first["error"]
    assert [first["environment"]["compile_cache"], second["environment"]["compile_cache"]] == ["miss", "hit"]
    assert second["phases"]["compile_import"] < first["phases"]["compile_import"] / 3


def test_host_time_tells_a_launch_bound_call_from_a_gpu_bound_one():
    """Launch-bound calls get process pairs (pair_policy.pairs_wanted). On the GPU, a call of 300 tiny
    kernels returns when its last launch is issued, about when the GPU finishes; one large matmul returns at once."""
    from evaluator.harness.timing import time_calls
    from evaluator.harness.workers.l2 import L2Flusher
    from evaluator.harness.workers.lead import LaunchLead

    small, big = torch.rand(64, device="cuda"), torch.rand(8192, 8192, device="cuda")

    def many_tiny(x):
        for _ in range(300):
            x = x * 1.0001
        return x

    def fractions(fn, x):
        host: list[float] = []
        times, _ = time_calls(
            fn, [[x]], 30, 0, cuda=True, flush=L2Flusher("cuda"), clock_ns=__import__("time").perf_counter_ns,
            event_cls=torch.cuda.Event, synchronize=torch.cuda.synchronize, lead=LaunchLead("cuda", 100.0), host=host,
        )  # fmt: skip
        return sorted(host)[15] / sorted(times)[15]

    assert fractions(many_tiny, small) > 0.5  # host_bound_fraction: pairs
    assert fractions(lambda m: m @ m, big) < 0.2  # one pair


def _device_used() -> int:
    free, total = torch.cuda.mem_get_info()  # the whole device's, every process's (this one's context included)
    return total - free


def test_a_standby_holds_no_device_memory_until_it_has_its_evaluation(tmp_path):
    """A standby's workers import torch while they wait but make their CUDA contexts only once their evaluation's
    start is admitted to the device's memory (gpu_holds.py): waiting, they would be outside every declaration."""
    import time

    from evaluator.runner import discard_standby

    def evaluate() -> dict:
        return _run(tmp_path, "relu_large.py", "relu_correct.py", prestart=True)

    before = _device_used()
    try:
        first = evaluate()
        assert first["status"] == "ok", first["error"]
        time.sleep(15)  # the standby's workers up (torch imported) by now; their contexts would show
        # two contexts are >= 0.5 GiB each on an H100 or H200
        assert _device_used() - before < 256 << 20, "a parked standby holds device memory"
        second = evaluate()
        assert second["status"] == "ok" and second["environment"].get("prestarted_workers") is True
        assert second["phases"]["device_context"] > 0
    finally:
        discard_standby()
