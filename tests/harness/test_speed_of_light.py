"""FLOP/byte counting (flops.py) against hand counts, the roofline bound (roofline.py), and the launched-
kernel summary and "no custom kernel launched" logic (launched.py) on synthetic profiles. CPU only."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evaluator.harness.orchestrator.launched import custom_launched, defined_kernels, report, summarise
from evaluator.harness.orchestrator.roofline import peaks_for, speed_of_light
from evaluator.harness.record import SpeedOfLight
from evaluator.harness.workers.flops import SOFTMAX_FLOPS_PER_ELEMENT, count_source

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "leaderboard" / "demo" / "problems"
KERNELBENCH = ROOT / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"
F32 = 4


def _problem(body: str, inputs: str, init: str = "[]") -> str:
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
        f"class Model(nn.Module):\n{body}\n\n"
        f"def get_inputs():\n    return {inputs}\n\n"
        f"def get_init_inputs():\n    return {init}\n"
    )


# --- hand counts -----------------------------------------------------------------------------------------------


def test_matmul_hand_count():
    m, k, n = 128, 256, 64
    src = _problem(
        "    def forward(self, a, b):\n        return torch.matmul(a, b)",
        f"[torch.randn({m}, {k}), torch.randn({k}, {n})]",
    )
    c = count_source(src)
    assert c["matrix_flops"] == 2 * m * k * n and c["vector_flops"] == 0
    assert c["bytes"] == F32 * (m * k + k * n + m * n)
    assert c["dtype"] == "float32"


def test_conv_hand_count_with_parameters():
    b, cin, cout, h, w, kk = 2, 3, 8, 16, 16, 3
    src = _problem(
        f"    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d({cin}, {cout}, {kk})\n"
        "    def forward(self, x):\n        return self.conv(x)",
        f"[torch.randn({b}, {cin}, {h}, {w})]",
    )
    c = count_source(src)
    ho, wo = h - kk + 1, w - kk + 1
    assert c["matrix_flops"] == 2 * b * cout * ho * wo * cin * kk * kk
    params = cout * cin * kk * kk + cout
    assert c["param_bytes"] == F32 * params
    assert c["bytes"] == F32 * (b * cin * h * w + b * cout * ho * wo + params)


def test_elementwise_and_softmax_hand_counts():
    n = 4096
    relu = count_source(_problem("    def forward(self, x):\n        return torch.relu(x)", f"[torch.randn(8, {n})]"))
    assert relu["matrix_flops"] == 0 and relu["vector_flops"] == 8 * n
    assert relu["bytes"] == 2 * F32 * 8 * n
    soft = count_source(
        _problem("    def forward(self, x):\n        return torch.softmax(x, dim=1)", f"[torch.randn(8, {n})]")
    )
    assert soft["vector_flops"] == SOFTMAX_FLOPS_PER_ELEMENT * 8 * n
    assert soft["bytes"] == 2 * F32 * 8 * n


def test_demo_problems_are_counted():
    counts = {p.name: count_source(p.read_text()) for p in sorted(DEMO.rglob("*.py"))}
    assert all(c is not None for c in counts.values()), counts
    assert counts["2_Matmul.py"]["matrix_flops"] == 2 * 256**3
    assert counts["2_Matmul.py"]["bytes"] == 3 * 256 * 256 * F32
    assert counts["1_ReLU.py"]["bytes"] == 2 * counts["1_ReLU.py"]["input_bytes"]
    assert counts["1_Linear_BatchNorm_GELU.py"]["param_bytes"] > 0


def test_sampled_kernelbench_problems_are_counted():
    rows = [json.loads(line) for line in KERNELBENCH.read_text().splitlines() if line.strip()]
    by_key = {(r["level"], r["problem_id"]): r for r in rows}
    # L1/1 square matmul (N = 2048 * 2), L1/19 ReLU, L1/23 softmax: hand counts from the shapes in the file
    mm = count_source(by_key[(1, 1)]["source"])
    n = int(mm["input_bytes"] / (2 * F32)) ** 0.5
    assert mm["matrix_flops"] == 2 * round(n) ** 3
    relu = count_source(by_key[(1, 19)]["source"])
    assert relu["bytes"] == 2 * relu["input_bytes"] and relu["vector_flops"] == relu["input_bytes"] // F32
    soft = count_source(by_key[(1, 23)]["source"])
    assert soft["vector_flops"] == SOFTMAX_FLOPS_PER_ELEMENT * soft["input_bytes"] // F32
    # and a random sample of the rest runs on the meta device
    sample = random.Random(19).sample([r for r in rows if r["level"] in (1, 2, 3)], 8)
    counted = [count_source(r["source"]) for r in sample]
    assert sum(c is not None for c in counted) >= 7
    assert all(c["bytes"] > 0 for c in counted if c is not None)


# --- the bound -------------------------------------------------------------------------------------------------


def test_device_table():
    assert peaks_for("NVIDIA H200").bandwidth == 4.8e12
    assert peaks_for("NVIDIA H100 80GB HBM3").bandwidth == 3.35e12
    assert peaks_for("NVIDIA H100 PCIe").name == "H100 PCIe"
    assert peaks_for("NVIDIA A100-SXM4-80GB").bandwidth == 2.039e12
    assert peaks_for("cpu") is None and peaks_for(None) is None


def test_roofline_bound_and_fraction():
    counts = {"matrix_flops": int(494.5e12), "vector_flops": 0, "bytes": int(4.8e9), "dtype": "float32"}
    sol = speed_of_light(counts, "NVIDIA H200", kernel_ms=2000.0)
    assert sol["precision"] == "tf32" and sol["limit"] == "compute"
    assert sol["bound_ms"] == pytest.approx(1000.0) and sol["memory_ms"] == pytest.approx(1.0)
    assert sol["fraction"] == pytest.approx(0.5) and not SpeedOfLight(**sol).faster_than_light()
    fast = speed_of_light(counts, "NVIDIA H200", kernel_ms=500.0)
    assert SpeedOfLight(**fast).faster_than_light()
    bf16 = speed_of_light({**counts, "dtype": "bfloat16"}, "NVIDIA H200", kernel_ms=None)
    assert bf16["bound_ms"] == pytest.approx(500.0, rel=1e-3) and bf16["fraction"] is None
    cpu = speed_of_light(counts, None, kernel_ms=1.0)
    assert cpu["flops"] == counts["matrix_flops"] and cpu["bound_ms"] is None and cpu["fraction"] is None
    assert speed_of_light(None, "NVIDIA H200", 1.0) is None


# --- what ran --------------------------------------------------------------------------------------------------

GELU_DECOY = '''
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.cpp_extension import load_inline
src = """
__global__ void gelu_kernel(const float* x, float* y, int n) { }
torch::Tensor gelu(torch::Tensor x) { return x; }
"""
ext = load_inline(name="g", cpp_sources="", cuda_sources=src, functions=["gelu"])
class ModelNew(nn.Module):
    def forward(self, x):
        return F.gelu(x)
'''
TRITON = """
import triton, triton.language as tl
@triton.autotune(configs=[], key=["n"])
@triton.jit
def add_kernel(x, y, n, BLOCK: tl.constexpr):
    pass
"""
BASELINE = [["void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>(...)", 10.0]]


def test_summarise_a_synthetic_profile():
    events = [["k_a", 3.0], ["k_b", 1.0], ["k_a", 4.0]] + [[f"tiny{i}", 0.0] for i in range(30)]
    s = summarise(events, top=3)
    assert s["launches"] == 33 and s["total_us"] == 8.0
    assert s["kernels"][0] == {"name": "k_a", "count": 2, "time_us": 7.0, "share": 7 / 8}
    assert s["kernels"][-1]["name"] == "(29 other kernels)" and s["kernels"][-1]["count"] == 29


def test_defined_kernel_names():
    assert defined_kernels(GELU_DECOY) == {"builds": True, "names": ["gelu_kernel"]}
    assert defined_kernels(TRITON)["names"] == ["add_kernel"]
    assert defined_kernels("class ModelNew(nn.Module): pass") == {"builds": False, "names": []}


def test_decoy_kernel_is_flagged_and_a_real_one_is_not():
    decoy = report(GELU_DECOY, BASELINE, BASELINE)
    assert decoy["custom_launched"] is False and decoy["custom_defined"] == ["gelu_kernel"]
    real = report(GELU_DECOY, [["void gelu_kernel(float const*, float*, int)", 5.0]], BASELINE)
    assert real["custom_launched"] is True
    plain = report("class ModelNew: pass", BASELINE, BASELINE)
    assert plain["custom_launched"] is None  # no device code of its own: nothing to say
    assert report(GELU_DECOY, None, None) is None  # the CPU: nothing recorded
    # names unknown (a build without a __global__ in the file): a kernel the baseline never launches counts
    unnamed = {"builds": True, "names": []}
    assert custom_launched(unnamed, summarise([("my_fused", 1.0)]), summarise([("at::gelu", 1.0)])) is True
    assert custom_launched(unnamed, summarise([("at::gelu", 1.0)]), summarise([("at::gelu", 1.0)])) is None


def test_runtime_signals_flag_the_decoy_and_faster_than_light():
    from evaluator.audit.runtime_signals import runtime_findings

    record = {"launched_kernels": report(GELU_DECOY, BASELINE, BASELINE), "checks": []}
    rules = [f.rule for f in runtime_findings(record)]
    assert rules == ["runtime:no_custom_kernel"]
    sol = {"bound_ms": 1.0, "memory_ms": 1.0, "fraction": 2.0}
    fast = runtime_findings({"speed_of_light": sol, "timing": {"candidate": {"median_ms": 0.5}}, "checks": []})
    assert [(f.rule, f.verdict) for f in fast] == [("runtime:faster_than_light", "hack")]
    algebra = {"bound_ms": 1.0, "memory_ms": 0.1, "fraction": 2.0}
    fast = runtime_findings({"speed_of_light": algebra, "timing": {"candidate": {"median_ms": 0.5}}, "checks": []})
    assert [(f.rule, f.verdict) for f in fast] == [("runtime:faster_than_light", "suspicious")]
