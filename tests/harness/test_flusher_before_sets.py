"""The L2 flush buffer is made before the timing sets, from an emptied cache (l2.flusher_before_sets).

On an H100 (2026-12-05) L1/19 (6 GiB tensors) ran out of its worker's share of the device in the fresh-input probe:
the 256 MiB flush buffer, made after the sets, had been cut from a 6 GiB block a forward freed, and the rest of that
block (5.75 GiB) could serve no set again. Made first, it has a segment of its own (the same run after the change:
L1/19, L1/23, L1/27 and L1/28 all correct, four at once). The allocator's effect is the GPU's; here, the order."""

from __future__ import annotations

from pathlib import Path

from evaluator.harness.workers import reference_worker
from evaluator.harness.workers.l2 import L2Flusher, flusher_before_sets

from .conftest import PROBLEMS


def test_the_reference_makes_its_flush_buffer_before_its_timing_sets(monkeypatch, tmp_path) -> None:
    order: list[str] = []
    ref = reference_worker.Reference()
    ref.setup({"device": "cpu", "problem_path": str(PROBLEMS / "relu.py"), "init_path": str(tmp_path / "init.pt")})
    make_inputs = ref._inputs

    def flusher(device: str) -> L2Flusher:
        order.append("flush buffer")
        return flusher_before_sets(device)

    def inputs(seed: int, scale: float | str) -> list:
        order.append("set")
        return make_inputs(seed, scale)

    monkeypatch.setattr(reference_worker, "flusher_before_sets", flusher)
    monkeypatch.setattr(ref, "_inputs", inputs)
    ref.timing_setup({"seeds": [1, 2], "warmup": 1})
    assert order == ["flush buffer", "set", "set"]
    assert len(ref.sets) == 2 and ref.flusher is not None


def test_the_candidate_makes_its_flush_buffer_before_its_timing_sets() -> None:
    # the candidate worker is not imported into the test process (it starts its tamper watch at import): its
    # timing_setup is read instead
    source = (Path(reference_worker.__file__).parent / "candidate_worker.py").read_text()
    body = source[source.index("    def timing_setup(") :]
    assert body.index("flusher_before_sets(") < body.index("self._inputs(")
