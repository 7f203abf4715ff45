"""Issue 17, parts 1 and 4: the precision flags each phase runs under, and the tolerance policy per output dtype.

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
    # ran under full FP32 (before issue 17 they ran under the TF32 flags and all four failed)
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
