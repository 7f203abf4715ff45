"""What an evaluation declares of the device covers what its reference worker was measured to hold there, step by
step (orchestrator/declared_memory.worker_bytes), for every problem of the committed H100 runs: the declaration an
evaluation makes the first time its problem is seen on a device, from the meta device's counts alone."""

from __future__ import annotations

import json
from pathlib import Path

from evaluator.harness.orchestrator.declared_memory import CUDA_WORKER_BYTES, worker_bytes
from evaluator.harness.protocol import Options
from evaluator.harness.workers import compare
from evaluator.harness.workers.flops import count_source

ROOT = Path(__file__).resolve().parents[2]
# 22 problems evaluated once each on a cold H100 (no seen peak), 2026-12-07: benchmarks/results/
# declared-vs-reserved-h100-2026-12-07.md, "After"
MEASURED = sorted((ROOT / "benchmarks/results/seen-peak-h100-2026-12-07/after").glob("*/*.jsonl"))


def _rows() -> list[dict]:
    rows = [json.loads(line) for path in MEASURED for line in path.read_text().splitlines()]
    return [r for r in rows if (r.get("gpu_hold") or {}).get("reference_reserved_peak_bytes")]


def test_the_declaration_covers_what_each_reference_worker_held_on_an_h100(problems_jsonl):
    problems = {f"L{p['level']}/{p['problem_id']}": p["source"] for p in map(json.loads, problems_jsonl.open())}
    rows = _rows()
    assert len(rows) >= 20, MEASURED
    short = {}
    for row in rows:
        counts = count_source(problems[row["key"]])
        assert counts is not None, row["key"]
        declared = CUDA_WORKER_BYTES + worker_bytes(
            counts["input_bytes"] + counts["output_bytes"],
            counts["peak_bytes"],
            Options().input_sets,
            True,
            counts["output_bytes"],
            counts["param_bytes"],
        )
        held = row["gpu_hold"]["reference_reserved_peak_bytes"]
        if held > declared:
            short[row["key"]] = (held, declared, row["gpu_hold"]["reference_reserved_peak_by_command"])
    assert not short, short


def test_a_comparison_in_chunks_finds_what_a_whole_one_finds(monkeypatch):
    """The chunk size bounds the comparison's temporaries (protocol.COMPARE_CHUNK_ELEMENTS); it changes no figure."""
    import torch

    ref = torch.linspace(-3, 3, 1000)
    out = ref.clone()
    out[[5, 700, 999]] += torch.tensor([0.5, 2e-2, 1.0])
    out[400] = float("nan")
    whole = compare.compare_outputs(out, ref, 1e-3)
    monkeypatch.setattr(compare, "CHUNK", 64)
    chunked = compare.compare_outputs(out, ref, 1e-3)
    assert chunked == whole
    assert whole["beyond_tolerance"] == 4 and not whole["passed"]
