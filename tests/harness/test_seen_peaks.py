"""What a GPU evaluation learns of the device from its reference worker (never the kernel): the device's free
memory and the allocator's reserved peak (workers/device.device_memory, bring_up.note_reserved_peak), kept per
device and problem in the lock folder (orchestrator/seen_peaks.py) as the least the problem's next evaluation
declares for a worker (declared_memory.reservation_bytes)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evaluator.harness.errors import HarnessInfraError
from evaluator.harness.orchestrator.declared_memory import SEEN_CAP, reservation_bytes
from evaluator.harness.record import Record

MB = 1 << 20


def test_the_device_memory_reading_is_empty_without_a_cuda_context():
    """The reference worker reads the device's free memory only where it has a CUDA context (workers/device.py):
    on the CPU the reading is empty and crowded_out says nothing of it."""
    from evaluator.harness.commands import REFERENCE_COMMANDS, Command
    from evaluator.harness.workers.device import device_memory

    assert Command.DEVICE_MEMORY in REFERENCE_COMMANDS
    assert device_memory({}) == {}


def test_a_problems_seen_reference_peak_is_the_least_a_worker_declares(tmp_path):
    """On an H100 10 of 23 reference workers held more of the device than their meta-device declaration (up to
    1.9x): what an evaluation's reference worker held at its most is kept in the lock folder (seen_peaks.py), and
    the problem's next evaluation on the device declares at least that for each worker."""
    from evaluator.harness.orchestrator import seen_peaks
    from evaluator.harness.orchestrator.evaluation import EvaluationRun
    from evaluator.harness.protocol import Spec

    locks, sha = tmp_path / "locks", "ab" * 32
    locks.mkdir()
    spec = Spec(
        problem_path="", kernel_path="", device="cpu", work_dir=str(tmp_path / "work"),
        options={"gpu_lock_dir": str(locks), "gpu_memory_budget_mb": 1000},
    )  # fmt: skip

    def declared() -> tuple[int, int | None]:
        run = EvaluationRun(spec, lambda event: None)
        run.ctx.footprint, run.ctx.record.environment.problem_sha256 = 5 * MB, sha
        with run.gpu.memory(dict):
            run.gpu.declare()
        hold = run.ctx.record.environment.gpu_hold
        return hold.reserved_bytes, hold.seen_peak_bytes

    estimate = reservation_bytes(
        footprint=5 * MB, peak_bytes=0, input_sets=3, capacity=1 << 40, cuda=False, output_bytes=0, param_bytes=0
    )
    assert declared() == (estimate, None)  # nothing seen yet: the meta-device estimate
    file = seen_peaks.path(str(locks), sha)
    seen_peaks.remember(file, 100 * MB)
    seen_peaks.remember(file, 60 * MB)  # a smaller reading keeps the larger
    assert seen_peaks.read(file) == 100 * MB
    assert declared() == (200 * MB, 100 * MB)  # two workers, each at least what was seen
    seen_peaks.remember(file, MB)
    assert declared()[0] == 200 * MB
    seen_peaks.remember(file, 900 * MB)  # beyond SEEN_CAP times the estimate: the cap, not the device
    assert declared()[0] == 2 * SEEN_CAP * (estimate // 2)
    # another problem, or none, sees nothing; a name that is no digest is not a path
    assert seen_peaks.read(seen_peaks.path(str(locks), "cd" * 32)) == 0
    assert seen_peaks.path(str(locks), "../../etc/passwd") is None and seen_peaks.path(str(locks), None) is None


def test_a_seen_peak_file_is_never_read_through_a_link_nor_trusted_when_malformed(tmp_path):
    from evaluator.harness.orchestrator import seen_peaks

    sha = "ef" * 32
    file = seen_peaks.path(str(tmp_path), sha)
    assert file is not None
    target = tmp_path / "elsewhere.json"
    target.write_text('{"reference_reserved_peak_bytes": 123456789}')
    file.symlink_to(target)
    assert seen_peaks.read(file) == 0  # a link is not followed
    file.unlink()
    for junk in ("[1, 2]", '{"reference_reserved_peak_bytes": true}', '{"reference_reserved_peak_bytes": -5}', "{"):
        file.write_text(junk)
        assert seen_peaks.read(file) == 0, junk


def test_the_reference_workers_reading_is_recorded_kept_for_the_next_evaluation_and_handed_back(tmp_path):
    """bring_up.note_reserved_peak: the highest reserved peak over the evaluation's process pairs in the record,
    the larger of what was seen kept in the lock folder, and the reading returned (a crowded-out error says what the
    device had free); the reader gone, nothing is recorded and the reading is empty."""
    from evaluator.harness.orchestrator import seen_peaks
    from evaluator.harness.orchestrator.bring_up import note_reserved_peak

    steps = [{"setup": 2, "timing_setup": 7}, {"setup": 3, "make_trial": 5, "junk": True}]
    readings = [
        {"free_bytes": 3 * MB, "total_bytes": 80 * MB, "reserved_peak_bytes": peak, "reserved_peak_by_command": by}
        for peak, by in zip((7, 5), steps, strict=True)
    ]
    replies = iter(readings)
    record = Record()
    record.environment.problem_sha256 = "ab" * 32
    ctx = SimpleNamespace(
        cuda=True, record=record, opts=SimpleNamespace(gpu_lock_dir=str(tmp_path)),
        ref=SimpleNamespace(device_memory=lambda: next(replies)),
    )  # fmt: skip
    assert note_reserved_peak(ctx) == readings[0]
    assert note_reserved_peak(ctx) == readings[1]  # a later pair's reference held less
    assert record.environment.gpu_hold.reference_reserved_peak_bytes == 7
    # the commands that raised it, the most each did over the pairs (a value that is not a count is dropped)
    assert record.environment.gpu_hold.reference_reserved_peak_by_command == {
        "setup": 3,
        "timing_setup": 7,
        "make_trial": 5,
    }
    assert seen_peaks.read(seen_peaks.path(str(tmp_path), "ab" * 32)) == 7

    def gone() -> dict[str, int]:
        raise HarnessInfraError("reference worker failed during device_memory: died")

    fresh = Record()
    ctx.ref, ctx.record = SimpleNamespace(device_memory=gone), fresh
    assert note_reserved_peak(ctx) == {} and fresh.environment.gpu_hold is None
    ctx.cuda = False  # no reading on the CPU: nothing asked
    assert note_reserved_peak(ctx) == {}


def test_the_reference_workers_commands_note_what_they_raised_its_reserved_peak_to(monkeypatch):
    """workers/memory.raising: after each command, what the allocator's reserved peak rose to is noted under the
    command's name (a failing command too); a command that does not raise it is not; off CUDA nothing is read."""
    from evaluator.harness.workers import memory

    peaks = iter([4, 4, 9, 6])  # what reserved_peak_bytes reads after each command below
    monkeypatch.setattr(memory, "_raised_by", {})
    monkeypatch.setattr(memory, "_initialized", lambda: True)
    monkeypatch.setattr(memory, "reserved_peak_bytes", lambda: next(peaks))

    def fails(message):
        raise RuntimeError("a reference that raised")

    memory.raising("setup", dict)({})
    memory.raising("compare", dict)({})  # held what setup held: not a step
    with pytest.raises(RuntimeError):
        memory.raising("timing_setup", fails)({})
    memory.raising("memory", dict)({})  # below the peak (never happens, a peak only rises): not a step either
    assert memory.raised_by() == {"setup": 4, "timing_setup": 9}
    monkeypatch.setattr(memory, "_initialized", lambda: False)
    memory.raising("recheck", dict)({})  # no CUDA context: nothing read (peaks would be exhausted)
    assert memory.raised_by() == {"setup": 4, "timing_setup": 9}
