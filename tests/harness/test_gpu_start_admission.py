"""An evaluation's start is admitted to the GPU's memory before its workers touch the device
(orchestrator/gpu_holds.py: memory() then declare()), and the device's UUID and size that admission needs are kept
in the lock folder by the first evaluation on it (orchestrator/device_facts.py). Runs on CPU: GpuHolds of a "cuda"
evaluation whose workers are not started, with the contexts' maker given."""

from __future__ import annotations

import json
import os
import threading
import time

from evaluator.harness.gpu_memory import MemoryLedger
from evaluator.harness.orchestrator import device_facts
from evaluator.harness.orchestrator.gpu_holds import reservation_bytes

MB = 1 << 20


def _cuda_run(tmp_path, name: str):
    """An evaluation on a "cuda" device, its workers not started: GpuHolds alone, on this CPU machine."""
    from evaluator.harness.orchestrator.evaluation import EvaluationRun
    from evaluator.harness.protocol import Spec

    spec = Spec(
        problem_path="", kernel_path="", device="cuda", work_dir=str(tmp_path / name),
        options={"gpu_lock_dir": str(tmp_path / "locks")},
    )  # fmt: skip
    return EvaluationRun(spec, lambda event: None)


def test_no_worker_touches_the_device_before_its_start_is_admitted(tmp_path):
    """The workers make their CUDA contexts only once the evaluation's start (two contexts) is admitted beside the
    others' declarations: made before, a waiting evaluation's contexts were memory no declaration counted, and on
    an 80 GB H100 a whole-device declaration ran out of memory beside 9.3 GiB of them. The device's UUID and size
    come from a context, so the first evaluation on a device makes its contexts first and leaves them in the lock
    folder for the others."""
    facts = {"uuid": "GPU-test", "total_memory_bytes": 10 * 2**30}
    capacity = int(facts["total_memory_bytes"] * 0.9)
    made: list[tuple[str, int]] = []  # (evaluation, declarations on the device when its contexts were made)

    def contexts(name: str):
        def make() -> dict:
            made.append((name, MemoryLedger(tmp_path / "locks", "GPU-test").others()[0]))
            return dict(facts)

        return make

    first = _cuda_run(tmp_path, "first")
    with first.gpu.memory(contexts("first")):  # nothing known yet: contexts first, then the admission
        assert made == [("first", 0)]
        assert first.gpu._capacity() == capacity  # from the facts its contexts reported
    assert json.loads((tmp_path / "locks" / "device-all.json").read_text()) == facts
    whole = MemoryLedger(tmp_path / "locks", "GPU-test")
    got = threading.Event()

    def second() -> None:
        run = _cuda_run(tmp_path, "second")
        with run.gpu.memory(contexts("second")):
            got.set()

    with whole.reserve(capacity, capacity, time.monotonic() + 10):  # another evaluation holds the whole device
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(1.0)
        assert len(made) == 1 and not got.is_set()  # waiting: no context made
    thread.join(10)
    assert got.is_set() and made[1] == ("second", 1)  # made once admitted: its own start is the 1 declaration


def test_a_start_grows_to_the_evaluations_declaration_once_it_fits(tmp_path):
    """declare(): the start's declaration (two CUDA contexts) grows to the evaluation's own once the reference has
    measured its footprint, waiting while that does not fit; the record says what it waited for."""
    (tmp_path / "locks").mkdir()
    facts = {"uuid": "GPU-t", "total_memory_bytes": 64 * 2**30}
    (tmp_path / "locks" / "device-all.json").write_text(json.dumps(facts))
    capacity = int(0.9 * facts["total_memory_bytes"])
    run = _cuda_run(tmp_path, "grows")
    run.ctx.footprint, run.ctx.counts = 50 * MB, {"peak_bytes": 50 * MB}
    other = MemoryLedger(tmp_path / "locks", "GPU-t")
    released = threading.Event()

    def other_evaluation() -> None:  # holds all but 1.6 GiB for a second
        with other.reserve(capacity - int(1.6 * 2**30), capacity, time.monotonic() + 10):
            time.sleep(1.0)
        released.set()

    thread = threading.Thread(target=other_evaluation)
    thread.start()
    time.sleep(0.2)
    with run.gpu.memory(dict):  # the start (1.5 GiB) fits at once
        assert run.ctx.record.phases["gpu_memory_wait_start"] == 0 and not released.is_set()
        run.gpu.declare()  # the evaluation's own (about 2 GiB) waits for the other to end
        assert released.is_set()
        hold = run.ctx.record.environment.gpu_hold
        expected = reservation_bytes(footprint=50 * MB, peak_bytes=50 * MB, input_sets=run.ctx.opts.input_sets,
                                     capacity=capacity, cuda=True)  # fmt: skip
        assert hold.reserved_bytes == expected and MemoryLedger(tmp_path / "locks", "GPU-t").others() == (1, expected)
        assert hold.waited_s >= 0.5 and "1 other evaluations held 56.0 of 57.6 GiB" in hold.waited_for, hold.waited_for
        assert run.ctx.record.phases["gpu_memory_wait"] == hold.waited_s
    thread.join()


def test_the_device_facts_are_never_read_or_written_through_a_planted_link(tmp_path):
    """The facts' file is opened by descriptor without following links, like the lock files beside it: a link
    planted where it belongs is not read, and writing replaces the link, never what it points to."""
    elsewhere = tmp_path / "elsewhere.json"
    facts = {"uuid": "GPU-x", "total_memory_bytes": 2**30}
    elsewhere.write_text(json.dumps(facts))
    file = tmp_path / "device-all.json"
    os.symlink(elsewhere, file)
    assert device_facts.read(file) == {}
    device_facts.write(file, {"uuid": "GPU-y", "total_memory_bytes": 2**31})
    assert json.loads(elsewhere.read_text()) == facts  # the link's target untouched
    assert not file.is_symlink() and device_facts.read(file) == {"uuid": "GPU-y", "total_memory_bytes": 2**31}
    assert oct(file.stat().st_mode & 0o777) == oct(0o644)  # readable by every uid's orchestrator
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_the_start_declares_the_references_parameters_counted_before_the_device_is_touched(evaluate, tmp_path):
    """The reference worker counts the problem on the meta device (setup_phase.survey) before the evaluation asks
    for memory, so what a start declares (start_bytes) holds the model's parameters as well as the contexts: left
    out, an evaluation waiting to grow held its reference's parameters outside every declaration. Then the
    evaluation's own declaration. Watched in the ledger from another thread, on the CPU (no contexts)."""
    from evaluator.harness.orchestrator.gpu_holds import start_bytes
    from evaluator.harness.workers.flops import count_namespace
    from evaluator.harness.workers.inputs import load_problem
    from tests.harness.conftest import source

    ns = load_problem(source("problem", "linear_bn_large"))
    counts = count_namespace(ns)
    assert counts is not None and counts["param_bytes"] > 8 * MB  # a 4096 x 512 Linear
    locks = tmp_path / "locks"
    seen: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        ledger = MemoryLedger(locks, "cpu")
        while not stop.is_set():
            if locks.exists():
                held = ledger.others()[1]
                if held and (not seen or seen[-1] != held):
                    seen.append(held)
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        record = evaluate("linear_bn_large", "linear_bn_correct", gpu_lock_dir=str(locks), gpu_memory_budget_mb=4096)
    finally:
        stop.set()
        watcher.join()
    assert record["status"] == "ok", record["error"]
    declared = record["environment"]["gpu_hold"]["reserved_bytes"]
    assert seen[:2] == [start_bytes(counts["param_bytes"], cuda=False), declared], (seen, declared)
