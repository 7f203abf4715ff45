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
from evaluator.harness.orchestrator.declared_memory import reservation_bytes
from evaluator.harness.protocol import Options

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


def test_the_whole_declaration_is_admitted_before_the_contexts_and_waits_while_it_does_not_fit(tmp_path):
    """memory(): the evaluation's own declaration (from the footprint and peak survey() counted on the meta device)
    is what is admitted, before any context is made, waiting while it does not fit beside another evaluation; the
    record says what it waited for."""
    (tmp_path / "locks").mkdir()
    facts = {"uuid": "GPU-t", "total_memory_bytes": 64 * 2**30}
    (tmp_path / "locks" / "device-all.json").write_text(json.dumps(facts))
    capacity = int(0.9 * facts["total_memory_bytes"])
    run = _cuda_run(tmp_path, "admitted")
    run.ctx.footprint, run.ctx.counts = 50 * MB, {"peak_bytes": 50 * MB}
    other = MemoryLedger(tmp_path / "locks", "GPU-t")
    released = threading.Event()
    made = []

    def other_evaluation() -> None:  # holds all but 1.6 GiB for a second
        with other.reserve(capacity - int(1.6 * 2**30), capacity, time.monotonic() + 10):
            time.sleep(1.0)
            released.set()

    thread = threading.Thread(target=other_evaluation)
    thread.start()
    time.sleep(0.2)
    expected = reservation_bytes(footprint=50 * MB, peak_bytes=50 * MB, input_sets=run.ctx.opts.input_sets,
                                 capacity=capacity, cuda=True, output_bytes=0, param_bytes=0)  # fmt: skip
    assert expected > int(1.6 * 2**30)  # two contexts alone would have fitted at once
    with run.gpu.memory(lambda: made.append(released.is_set()) or {}):  # about 2 GiB: waits for the other
        assert made == [True] and MemoryLedger(tmp_path / "locks", "GPU-t").others() == (1, expected)
        run.gpu.declare()
        hold = run.ctx.record.environment.gpu_hold
        assert hold.reserved_bytes == expected
        assert hold.waited_s >= 0.5 and "1 other evaluations held 56.0 of 57.6 GiB" in hold.waited_for, hold.waited_for
        assert (
            run.ctx.record.phases["gpu_memory_wait"] == run.ctx.record.phases["gpu_memory_wait_start"] == hold.waited_s
        )
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


def test_the_first_declaration_is_counted_before_the_device_is_touched(evaluate, tmp_path):
    """The reference worker counts the problem on the meta device (setup_phase.survey) before the evaluation asks
    for memory, so its first reservation in the ledger is already its whole declaration (the model's parameters, a
    forward's peak, the timing sets): admitted as a start of two contexts and grown later, an evaluation waiting to
    grow held its reference's parameters outside every declaration, and two whole-device evaluations whose starts
    were both admitted each waited for the other. Watched in the ledger from another thread, on the CPU."""
    from evaluator.harness.workers.flops import count_namespace
    from evaluator.harness.workers.inputs import load_problem
    from tests.harness.conftest import following, source

    counts = count_namespace(load_problem(source("problem", "linear_bn_large")))
    assert counts is not None and counts["param_bytes"] > 8 * MB  # a 4096 x 512 Linear
    locks = tmp_path / "locks"
    seen: list[int] = []

    def watch(stop: threading.Event) -> None:
        ledger = MemoryLedger(locks, "cpu")
        while not stop.is_set():
            if locks.exists():
                held = ledger.others()[1]
                if held and (not seen or seen[-1] != held):
                    seen.append(held)
            time.sleep(0.002)

    with following(watch):
        record = evaluate("linear_bn_large", "linear_bn_correct", gpu_lock_dir=str(locks), gpu_memory_budget_mb=4096)
    assert record["status"] == "ok", record["error"]
    declared = reservation_bytes(footprint=counts["input_bytes"] + counts["output_bytes"],
                                 peak_bytes=counts["peak_bytes"], input_sets=Options.build({"quick": True}).input_sets,
                                 capacity=4096 * MB, cuda=False, output_bytes=counts["output_bytes"],
                                 param_bytes=counts["param_bytes"])  # fmt: skip
    assert record["environment"]["gpu_hold"]["reserved_bytes"] == declared
    assert seen == [declared], (seen, declared)


def test_two_evaluations_that_each_need_the_whole_device_both_run(evaluate, tmp_path):
    """Two whole-device declarations arriving while a third evaluation holds half the device: once it ends, one is
    admitted and the other waits for it, then runs. Admitted as starts first and grown to the whole device later,
    both starts got in beside the third and each then waited for the other to leave, until the runner's backstop
    killed both: the replay of the full bundle found it (29 timeouts)."""
    locks = tmp_path / "locks"
    options = {"gpu_lock_dir": str(locks), "gpu_memory_budget_mb": 1024, "gpu_memory_reserve_mb": 1024}
    records: dict[str, dict] = {}

    def one(name: str) -> None:
        records[name] = evaluate("linear_bn_large", "linear_bn_correct", timeout=90, **options)

    threads = [threading.Thread(target=one, args=(name,)) for name in ("a", "b")]
    ledger = MemoryLedger(locks, "cpu")
    with ledger.reserve(512 * MB, 1024 * MB, time.monotonic() + 5):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while ledger.waiting() < 2 and time.monotonic() < deadline:  # both arrived and wait for memory
            time.sleep(0.01)
        assert ledger.waiting() == 2
    for thread in threads:
        thread.join()
    assert [records[n]["status"] for n in ("a", "b")] == ["ok", "ok"], [records[n]["error"] for n in ("a", "b")]
