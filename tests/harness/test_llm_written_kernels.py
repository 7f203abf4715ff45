"""Kernels in the shapes LLMs write them are judged on their merits: a whole file (numpy imported, the reference
Model beside ModelNew, a get_inputs of its own, which the harness never uses) and torch.compile. Real harness, CPU."""

from __future__ import annotations


def test_a_whole_file_kernel_that_imports_numpy_is_credited(evaluate):
    record = evaluate("relu", "relu_whole_file_numpy")
    assert record["status"] == "ok" and record["correct"] is True, record.get("error")
    # the problem's inputs (torch.rand, all positive) and its hidden distributions, never the kernel's randn
    assert {d["name"] for d in record["distributions"]} >= {"D1", "D2", "D3", "D4"}


COMPILED = """
import torch
import torch.nn as nn

_relu = torch.compile(torch.relu, dynamic=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return _relu(x)
"""


def test_a_torch_compile_kernel_starts_no_thread_and_no_process_of_its_own(evaluate):
    record = evaluate("relu", kernel_source=COMPILED)
    assert record["status"] == "ok" and record["correct"] is True, record.get("error")
    checks = {c["name"]: c for c in record["checks"]}
    assert checks["thread_count"]["passed"] is True, checks["thread_count"]
    assert "process_containment" not in checks
