"""The precision flags each phase runs under, and the tolerance policy per output dtype.

A kernel is judged on the arithmetic it chose: its correctness calls run under the reference's flags (full FP32),
its timed calls under the verified baseline's (TF32), and the record says which flags each side read back.
"""

from __future__ import annotations

from tests.harness.conftest import check, dist

FP32 = {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False, "float32_matmul_precision": "highest"}
TF32 = {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True, "float32_matmul_precision": "high"}


def test_correctness_runs_under_fp32_flags_and_timing_under_tf32(evaluate):
    record = evaluate("relu", "precision_flags_probe")
    # the probe is right only when called with TF32 off: every distribution passing means every correctness call
    # ran under full FP32 (before this policy they ran under the TF32 flags and all four failed)
    assert all(dist(record, name)["passed"] is True for name in ("D1", "D2", "D3", "D4")), record["error"]
    # its timed outputs are wrong by 1: the timed calls ran under the TF32 flags, as the baseline's do
    recheck = check(record, "timed_output_recheck")
    assert recheck["passed"] is False, recheck
    assert record["status"] == "rejected" and "timed_output_recheck" in record["error"]
    flags = record["environment"]["precision_flags"]
    assert flags["correctness"] == {"reference": FP32, "candidate": FP32}
    assert flags["timing"] == {"reference": TF32, "candidate": TF32, "reference_fp32": FP32}


def test_torch_operator_kernel_records_flags_per_phase(evaluate):
    record = evaluate("linear_bn", "linear_bn_correct")
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    assert check(record, "timed_output_recheck")["passed"] is True
    flags = record["environment"]["precision_flags"]
    assert flags["correctness"]["candidate"] == FP32 and flags["timing"]["candidate"] == TF32


NINE_WRONG = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.relu(x).clone()
        out.view(-1)[:9] += 5e-3  # nine elements past the 1e-3 gate (|ref| <= 3 under D2: allowance <= 4e-3)
        return out
"""

SCALED = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x.float() * 1.004).to(x.dtype)  # 0.4 % off: about 8 fp16 units in the last place
"""


def test_a_failing_distribution_says_how_far_it_was_from_passing(evaluate):
    record = evaluate("relu", kernel_source=NINE_WRONG)
    assert record["correct"] is False
    for name in ("D1", "D2", "D3", "D4"):
        d = dist(record, name)
        assert d["passed"] is False and d["beyond_tolerance"] == 9 and d["elements"] == 64 * 512, d
        assert d["atol"] == d["rtol"] == 1e-3
        assert 1.0 < d["worst_ratio"] <= 5.001, d  # 5e-3 against 1e-3 + 1e-3 * |ref|
    assert "worst element" in dist(record, "D1")["error"]


def test_compare_reports_ratio_and_count():
    torch = __import__("torch")
    from evaluator.harness.workers.compare import compare_outputs

    ref = torch.ones(1000)
    out = ref.clone()
    out[:9] += 2.6e-3
    res = compare_outputs(out, ref, 1e-3)
    assert res["passed"] is False and res["beyond_tolerance"] == 9 and res["elements"] == 1000
    assert abs(res["worst_ratio"] - 1.3) < 1e-3
    assert compare_outputs(ref.clone(), ref, 1e-3)["worst_ratio"] == 0.0


def test_half_precision_tolerance_policy():
    torch = __import__("torch")
    from evaluator.harness.protocol import tolerance_for
    from evaluator.harness.workers.compare import compare_outputs

    assert tolerance_for("torch.float32", 1e-3) == 1e-3  # the paper's gate stays for fp32
    assert tolerance_for("torch.float64", 1e-3) == 1e-3
    assert tolerance_for("torch.float16", 1e-3) == 1e-2
    assert tolerance_for("torch.bfloat16", 1e-3) == 2e-2
    assert tolerance_for("torch.bfloat16", 5e-2) == 5e-2  # a looser gate is never tightened
    ref = torch.linspace(0.5, 3.0, 4096)
    off = ref * 1.004  # 0.4 % off: fails fp32's 1e-3, within fp16's 1e-2
    assert compare_outputs(off, ref, 1e-3)["passed"] is False
    half = compare_outputs(off.half(), ref.half(), 1e-3)
    assert half["passed"] is True and half["atol"] == 1e-2 and half["worst_ratio"] < 1
    assert compare_outputs((ref * 1.015).bfloat16(), ref.bfloat16(), 1e-3)["passed"] is True
    assert compare_outputs((ref * 1.05).bfloat16(), ref.bfloat16(), 1e-3)["passed"] is False


def test_a_half_precision_problem_is_judged_by_the_half_precision_tolerance(evaluate):
    record = evaluate("relu_half", kernel_source=SCALED)
    assert record["correct"] is True, record["error"]  # failed D1-D4 at 1e-3 before the policy
    assert dist(record, "D1")["atol"] == 1e-2 and dist(record, "D1")["worst_ratio"] < 1
    assert record["environment"]["tolerance"]["half_precision"] == {"float16": 1e-2, "bfloat16": 2e-2}
