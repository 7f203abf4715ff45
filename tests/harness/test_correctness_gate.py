"""The verified gate on CPU: D1-D4, randomised parameters, the standard protocol, degenerate problems."""

from __future__ import annotations

from evaluator.harness.protocol import validate_result

from .conftest import check, dist


def test_correct_kernel_passes_with_speedup_and_ci(evaluate):
    record = evaluate("relu", "relu_correct")
    validate_result(record)
    assert record["status"] == "ok", record["error"]
    assert record["correct"] is True and record["standard_correct"] is True
    assert all(d["passed"] and d["trials"] >= 2 for d in record["distributions"])
    assert record["speedup"] > 0 and record["speedup_fp32"] > 0
    low, high = record["speedup_ci"]
    assert 0 < low <= high
    timing = record["timing"]
    assert timing["method"] == "cpu_perf_counter" and timing["device_kind"] == "cpu"
    assert timing["candidate"]["calls"] >= 10 and timing["baseline_tf32"]["calls"] >= 10
    assert record["memory_ratio"] is None  # not measurable on CPU
    assert record["reference_constant"] is False
    for name in (
        "output_plain_tensor",
        "output_no_alias",
        "inputs_unchanged",
        "timer_integrity",
        "timed_output_recheck",
        "determinism",
        "thread_count",
    ):
        assert check(record, name)["passed"] is True, check(record, name)
    env = record["environment"]
    assert len(env["seeds_digest"]) == 64 and env["torch"] and env["harness_version"]
    assert record["phases"]["correctness"] is not None and record["phases"]["timing"] is not None


def test_relu_identity_shape_hack_fails_d4_only(evaluate):
    record = evaluate("relu", "relu_shape_hack")
    assert record["status"] == "ok"
    assert record["standard_correct"] is True  # what KernelBench would have said
    assert record["correct"] is False
    assert [dist(record, n)["passed"] for n in ("D1", "D2", "D3", "D4")] == [True, True, True, False]
    assert "D4" in record["error"]
    assert record["speedup"] is not None  # timed: the standard protocol's speedup is still reported


def test_kernel_hard_coded_for_torch_rand_range_fails_hidden_distributions(evaluate):
    record = evaluate("scale_sum", "scale_sum_rand_hack")
    assert record["status"] == "ok" and record["correct"] is False and record["standard_correct"] is True
    assert dist(record, "D1")["passed"] is True
    assert dist(record, "D2")["passed"] is False and dist(record, "D4")["passed"] is False
    assert dist(record, "D2")["max_abs_error"] > 1e-3


def test_dropped_batchnorm_affine_passes_paper_gate_but_fails_randomised_params(evaluate):
    paper = evaluate("linear_bn", "linear_bn_dropped_affine", randomise_params=False)
    assert paper["correct"] is True and paper["params_randomised"] is False
    verified = evaluate("linear_bn", "linear_bn_dropped_affine")
    assert verified["params_randomised"] is True and check(verified, "params_randomised")["passed"] is True
    assert verified["standard_correct"] is True  # default init: BN weight 1, bias 0
    assert verified["correct"] is False and dist(verified, "D1")["passed"] is False


def test_faithful_batchnorm_kernel_passes_with_randomised_params(evaluate):
    record = evaluate("linear_bn", "linear_bn_correct")
    assert record["correct"] is True, record["distributions"]
    assert record["params_randomised"] is True
    assert "randomised" in check(record, "params_randomised")["detail"]


def test_partial_parameter_match_is_reported(evaluate):
    renamed = (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def __init__(self, i, o):\n        super().__init__()\n        self.fc = nn.Linear(i, o)\n"
        "        self.bn = nn.BatchNorm1d(o)\n        self.unused = nn.Parameter(torch.ones(3))\n\n"
        "    def forward(self, x):\n        return torch.nn.functional.gelu(self.bn(self.fc(x)))\n"
    )
    record = evaluate("linear_bn", kernel_source=renamed)
    # Renamed (fc vs linear) and an extra parameter: entries are still mapped in creation order by shape, so every
    # reference parameter reaches ModelNew and a faithful kernel passes on randomised weights.
    assert record["params_randomised"] is True, check(record, "params_randomised")["detail"]
    assert record["correct"] is True, record["distributions"]


def test_a_missing_parameter_is_randomised_in_the_reference_anyway(evaluate):
    """B11: no BatchNorm affine at all, default (1, 0) hard-coded: right only for the default values."""
    dropped = (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass ModelNew(nn.Module):\n"
        "    def __init__(self, i, o):\n        super().__init__()\n        self.linear = nn.Linear(i, o)\n"
        "        self.bn = nn.BatchNorm1d(o, affine=False)\n\n"
        "    def forward(self, x):\n        return F.gelu(self.bn(self.linear(x)))\n"
    )
    record = evaluate("linear_bn", kernel_source=dropped)
    assert record["params_randomised"] is False
    detail = check(record, "params_randomised")["detail"]
    assert "bn.weight" in detail and "bn.bias" in detail
    assert record["correct"] is False


def test_entry_matching_by_name_then_creation_order():
    from evaluator.harness.workers.reference_worker import match_entries

    ref = {"a.w": ((4, 2), "f"), "a.b": ((4,), "f"), "n.w": ((4,), "f"), "n.b": ((4,), "f")}
    cand = {"extra": ((3,), "f"), "x.w": ((4, 2), "f"), "x.b": ((4,), "f"), "n.w": ((4,), "f"), "y": ((4,), "f")}
    assert match_entries(ref, cand) == {"n.w": "n.w", "a.w": "x.w", "a.b": "x.b", "n.b": "y"}
    assert "n.b" not in match_entries(ref, {"a.w": ((4, 2), "f"), "a.b": ((4,), "f"), "n.w": ((4,), "f")})


def test_constant_reference_is_detected(evaluate):
    record = evaluate("constant", "constant_zero")
    assert record["reference_constant"] is True
    assert record["correct"] is True


def test_stale_memory_garbage_is_caught(evaluate):
    record = evaluate("relu", "stale_garbage")
    assert record["correct"] is False
    # Caught by the gate either way: the poisoned allocator hands back NaN, or (when malloc returns fresh zeroed pages,
    # as it does under memory pressure on CPU) half the output is zero; the determinism re-run is best effort on CPU.
    assert check(record, "determinism")["passed"] is False or dist(record, "D1")["passed"] is False
