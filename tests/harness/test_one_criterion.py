"""One correctness criterion everywhere (issue 38): the same numbers get the same verdict wherever they are found.

An output beyond tolerance by a precision-sized margin (worst element within protocol.PRECISION_MARGIN x its
allowance, NaN/Inf only where the reference has them) is `incorrect`, with its figures, in the gate's calls and in
timed calls alike; only an output beyond anything precision explains is evidence of cheating (`rejected`).
"""

from __future__ import annotations

import pytest
import torch

from evaluator.harness.protocol import PRECISION_MARGIN, miss_kind, precision_sized, validate_result
from evaluator.harness.workers.compare import compare_outputs, under_tf32

from .conftest import check, dist

# A ReLU whose first ten elements land 1.2x their allowance atol + rtol*|ref| away from the reference: the size of a
# TF32 convolution's miss on the H200 (9-12 of 32.8 M elements, 1.07-1.26x).
EDGE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.relu(x)
        if {when}:
            flat = out.view(-1)
            flat[:10] += 1.2e-3 * (1 + flat[:10].abs())
        return out
"""
ALWAYS = EDGE.format(when="True")
# ... only where TF32 is allowed: in timed calls, as a kernel whose arithmetic follows the flags would
TIMED_ONLY = EDGE.format(when="torch.backends.cuda.matmul.allow_tf32")


def _edge(ref: torch.Tensor, count: int = 10, ratio: float = 1.2) -> torch.Tensor:
    out = ref.clone()
    out.view(-1)[:count] += ratio * 1e-3 * (1 + ref.view(-1)[:count].abs())
    return out


def test_the_line_between_a_precision_miss_and_evidence():
    gen = torch.Generator().manual_seed(0)
    ref = torch.rand(64, 512, generator=gen)
    edge = compare_outputs(_edge(ref), ref, 1e-3)
    assert edge["beyond_tolerance"] == 10 and abs(edge["worst_ratio"] - 1.2) < 1e-3
    assert miss_kind(edge) == "precision" and "precision-sized" in edge["reason"]
    # lower-precision arithmetic moves every element a little (bf16 internally): a precision miss, however many
    low = compare_outputs((ref.bfloat16().float() * 1.004), ref, 1e-3)
    assert low["beyond_tolerance"] > 1000 and miss_kind(low) == "precision"
    # another input set's result (stale), a constant, garbage: far beyond
    stale = compare_outputs(torch.rand(64, 512, generator=gen), ref, 1e-3)
    assert stale["worst_ratio"] > 10 * PRECISION_MARGIN and miss_kind(stale) == "beyond"
    assert miss_kind(compare_outputs(torch.zeros_like(ref), ref, 1e-3)) == "beyond"
    nan = ref.clone()
    nan.view(-1)[3] = float("nan")
    assert miss_kind(compare_outputs(nan, ref, 1e-3)) == "beyond"
    # the line itself: PRECISION_MARGIN x the allowance
    assert miss_kind(compare_outputs(_edge(ref, ratio=0.99 * PRECISION_MARGIN), ref, 1e-3)) == "precision"
    assert miss_kind(compare_outputs(_edge(ref, ratio=1.01 * PRECISION_MARGIN), ref, 1e-3)) == "beyond"
    assert miss_kind(compare_outputs(ref.clone(), ref, 1e-3)) == "passed"
    assert not precision_sized(compare_outputs(ref[:10], ref, 1e-3))  # wrong shape: no figures, never precision


def test_timed_outputs_under_harness_tf32_may_be_as_far_from_fp32_as_the_tf32_baseline():
    """Timed calls run under TF32 flags the harness set: an output no further from the FP32 reference than the TF32
    baseline's own output passes; one further off keeps its FP32 comparison (and its kind)."""
    gen = torch.Generator().manual_seed(1)
    ref = torch.rand(4096, generator=gen)
    baseline = _edge(ref, count=12, ratio=1.3)  # the TF32 baseline itself misses FP32 by 1.3x in 12 elements
    kernel = ref.clone()
    kernel.view(-1)[100:109] += 1.2e-3 * (1 + ref.view(-1)[100:109].abs())  # elsewhere, 1.2x: its own rounding
    fp32 = compare_outputs(kernel, ref, 1e-3)
    judged = under_tf32(fp32, kernel, ref, baseline, 1e-3)
    assert fp32["passed"] is False and judged["passed"] is True and judged["reference"] == "tf32 baseline's spread"
    further = _edge(ref, count=5, ratio=2.5)
    kept = under_tf32(compare_outputs(further, ref, 1e-3), further, ref, baseline, 1e-3)
    assert kept["passed"] is False and miss_kind(kept) == "precision" and abs(kept["tf32_baseline_ratio"] - 1.3) < 1e-3
    same = under_tf32(compare_outputs(baseline, ref, 1e-3), baseline, ref, baseline, 1e-3)
    assert same["passed"] is True and same["reference"] == "tf32"


@pytest.mark.parametrize(("kernel", "where"), [(ALWAYS, "gate"), (TIMED_ONLY, "timed calls")], ids=["gate", "timed"])
def test_an_edge_miss_is_incorrect_wherever_it_falls(evaluate, kernel, where):
    record = evaluate("relu", kernel_source=kernel)
    validate_result(record)
    assert record["status"] == "ok" and record["correct"] is False, record["error"]
    assert record["error"].startswith("incorrect: "), record["error"]
    assert "precision-sized" in record["error"], record["error"]
    recheck = check(record, "timed_output_recheck")
    assert recheck["passed"] is not False, recheck  # never evidence of cheating
    timed = record["timed_outputs"]
    assert timed["name"] == "timed outputs" and timed["trials"] >= 1 and timed["passed"] is False, timed
    assert timed["beyond_tolerance"] == 10 and timed["elements"] == 64 * 512, timed
    assert 1.0 < timed["worst_ratio"] < 1.3 and timed["atol"] == timed["rtol"] == 1e-3, timed
    assert "input set" in timed["error"] and "precision-sized" in timed["error"], timed
    if where == "gate":
        assert [dist(record, n)["passed"] for n in ("D1", "D2", "D3", "D4")] == [False] * 4
        assert all(1.0 < dist(record, n)["worst_ratio"] < 1.3 for n in ("D1", "D2", "D3", "D4"))
        assert all(dist(record, n)["beyond_tolerance"] == 10 for n in ("D1", "D2", "D3", "D4"))
    else:
        assert [dist(record, n)["passed"] for n in ("D1", "D2", "D3", "D4")] == [True] * 4
        assert recheck["passed"] is True and "precision-sized margin" in recheck["detail"], recheck
        assert "timed outputs: input set" in record["error"], record["error"]
