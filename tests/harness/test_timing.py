"""Timing statistics and the KernelBench comparison loop."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

from evaluator.harness.protocol import validate_result
from evaluator.harness.timing import rse, rse_median, summarise

BUNDLE = Path(__file__).resolve().parents[2] / "benchmarks" / "bundle_gpu.py"


def test_the_median_rse_ignores_a_few_outliers_the_mean_rse_does_not():
    steady = [1.0 + 0.001 * (i % 7) for i in range(200)]
    noisy = steady[:-4] + [12.0, 15.0, 9.0, 20.0]  # another process's work landing on four calls
    assert rse(noisy) > 10 * rse(steady) and rse(noisy) > 0.005  # the mean's RSE would keep the loop running
    assert rse_median(noisy) < 1.2 * rse_median(steady) < 0.005  # the median's barely moves: the loop can stop
    assert math.isinf(rse_median([1.0])) and math.isinf(rse_median([0.0, 0.0]))


def test_summaries_report_both_standard_errors():
    stats = summarise([1.0, 1.1, 0.9, 1.05])
    assert stats["calls"] == 4 and stats["rse"] > 0 and stats["rse_median"] > 0
    assert summarise([])["rse_median"] is None


def test_paper_loop_is_recorded_beside_the_verdict_and_changes_nothing(evaluate):
    record = evaluate("relu", "relu_correct", paper_loop=True)
    validate_result(record)
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    paper = record["timing"]["paper_loop"]
    assert paper["calls"] == 100 and "no L2 flush" in paper["method"]
    assert paper["baseline_tf32_ms"] > 0 and paper["candidate_ms"] > 0
    assert paper["speedup"] == paper["baseline_tf32_ms"] / paper["candidate_ms"]
    for name in ("timing_setup", "timing_loop", "timing_checks"):  # where the timing phase's time went
        assert record["phases"][name] >= 0
    assert "paper_loop" not in evaluate("relu", "relu_correct")["timing"]


def test_a_bundle_run_resumes_where_the_last_sitting_stopped():
    spec = importlib.util.spec_from_file_location("bundle_gpu", BUNDLE)
    bundle_gpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bundle_gpu)
    items = [{"key": k} for k in ("L1/1", "L1/2", "L1/2", "L1/3")]
    rows = [
        {"key": "L1/1", "phase": "evaluate"},
        {"key": "L1/2", "phase": "evaluate"},
        {"key": "L1/3", "phase": "skipped"},  # not started last time: still to do
        {"key": "L1/2", "phase": "compile"},  # a build is not an evaluation
    ]
    assert [i["key"] for i in bundle_gpu.remaining(items, rows)] == ["L1/2", "L1/3"]
