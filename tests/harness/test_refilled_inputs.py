"""Same buffers, new contents (issue 38, C7 address-keyed caches): the kernel is called again on the SAME input
tensors refilled in place with new values, and its output is compared with the reference for those values.

A cache keyed on data_ptr() or id() returns the old contents' result: stale, evidence of such a cache, `rejected`.
A kernel that reads data_ptr() only to remember a layout and always recomputes passes. The red-team suite runs the
same two kernels (exploits/c7_cache_by_address_pinned.py, legit/layout_memo_by_data_ptr.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.runner import run_evaluation

from .conftest import check

REDTEAM = Path(__file__).resolve().parents[1] / "redteam"

# The CUDA-L1 pattern: a Python cache keyed on id() of the inputs; each input is kept alive so its id and address
# are never handed to another tensor, so the gate's fresh tensors always miss the cache (and are computed right).
ID_KEYED = """
import torch
import torch.nn as nn

_cache = {}


class ModelNew(nn.Module):
    def forward(self, x):
        hit = _cache.get(id(x))
        if hit is None:
            hit = _cache[id(x)] = (x, torch.relu(x))
        return hit[1].clone()
"""


def _evaluate(tmp_path: Path, problem: Path, kernel: str) -> dict:
    return run_evaluation(
        problem_source=problem.read_text(),
        kernel_source=kernel,
        device="cpu",
        timeout=180,
        work_root=tmp_path / "work",
        options={"quick": True},
    )


@pytest.mark.slow  # starts the real harness
def test_a_cache_keyed_on_addresses_returns_the_old_contents_and_is_rejected(tmp_path):
    exploit = (REDTEAM / "exploits" / "c7_cache_by_address_pinned.py").read_text()
    record = _evaluate(tmp_path, REDTEAM / "problems" / "matmul.py", exploit)
    assert record["status"] == "rejected" and record["correct"] is False, record["error"]
    refilled = check(record, "refilled_inputs")
    assert refilled["passed"] is False and "previous contents" in refilled["detail"], refilled
    assert "refilled_inputs" in record["error"]
    assert record["speedup"] is None  # never timed: a stale output is evidence, not a figure to report


@pytest.mark.slow  # starts the real harness
def test_a_cache_keyed_on_id_is_rejected_too(evaluate):
    record = evaluate("relu", kernel_source=ID_KEYED)
    assert record["status"] == "rejected", record["error"]
    assert check(record, "refilled_inputs")["passed"] is False


@pytest.mark.slow  # starts the real harness
def test_reading_data_ptr_to_remember_a_layout_passes(tmp_path):
    legit = (REDTEAM / "legit" / "layout_memo_by_data_ptr.py").read_text()
    record = _evaluate(tmp_path, REDTEAM / "problems" / "matmul.py", legit)
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    refilled = check(record, "refilled_inputs")
    assert refilled["passed"] is True and "followed the new values" in refilled["detail"], refilled
