"""Error bars that cover what a re-run would show (a speedup and interval over independent
process pairs for short problems), and blocks of short calls sized so the wall-clock cross-check's allowance is a
small fraction of a call."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest

from evaluator.harness.orchestrator.timing_record import wallclock_crosscheck
from evaluator.harness.protocol import Options, Record, validate_result
from evaluator.harness.timing import bootstrap_ratio_ci, calls_per_block, hierarchical_ratio_ci, pooled_ratio
from evaluator.runner import run_evaluation


def _calls(median: float, n: int, seed: int, spread: float = 0.01) -> list[float]:
    rng = random.Random(seed)
    return [median * (1 + rng.gauss(0, spread)) for _ in range(n)]


def test_one_pair_is_the_plain_call_bootstrap():
    base, cand = _calls(0.40, 300, 1), _calls(0.20, 300, 2)
    assert hierarchical_ratio_ci([(base, cand)], resamples=300, seed=5) == bootstrap_ratio_ci(
        base, cand, resamples=300, seed=5
    )
    assert hierarchical_ratio_ci([], resamples=10) is None


def test_the_interval_holds_the_pooled_ratio_and_widens_when_pairs_disagree():
    # two processes: the baseline's GEMM at 0.40 ms in one and 0.47 ms in the other (bundle-h200.md, section F)
    agree = [(_calls(0.40, 400, 1), _calls(0.20, 400, 2)), (_calls(0.40, 400, 3), _calls(0.20, 400, 4))]
    disagree = [(_calls(0.40, 400, 1), _calls(0.20, 400, 2)), (_calls(0.47, 400, 3), _calls(0.20, 400, 4))]
    for pairs in (agree, disagree):
        low, high = hierarchical_ratio_ci(pairs, resamples=400, seed=7)
        assert low <= pooled_ratio(pairs) <= high
    a_low, a_high = hierarchical_ratio_ci(agree, resamples=400, seed=7)
    d_low, d_high = hierarchical_ratio_ci(disagree, resamples=400, seed=7)
    assert d_high - d_low > 5 * (a_high - a_low)
    # it reaches (close to) each process's own ratio: what a re-run in either process would report
    assert d_low < 2.02 and d_high > 2.33
    # one process's calls-only interval misses the other process's ratio: what one process pair showed (disjoint CIs)
    one_low, one_high = bootstrap_ratio_ci(*disagree[0], resamples=400, seed=7)
    assert not one_low <= pooled_ratio(disagree[1:]) <= one_high


def test_with_three_or_more_pairs_the_interval_covers_the_t_interval_of_their_speedups():
    """Four processes whose speedups sit at 1.00, 0.92, 1.06, 0.97 (the host's launch latency differs per process:
    timing-spread-h200.md): a bootstrap over four pairs only ever sees those four, the t-interval of their mean
    (3 degrees of freedom) is wider; the reported interval holds both."""
    pairs = [
        (_calls(0.20, 300, i), _calls(0.20 / r, 300, 10 + i, 0.005)) for i, r in enumerate((1.0, 0.92, 1.06, 0.97))
    ]
    ratios = [pooled_ratio([p]) for p in pairs]
    half = 3.182 * statistics.stdev(ratios) / 2
    low, high = hierarchical_ratio_ci(pairs, resamples=400, seed=3)
    point = pooled_ratio(pairs)
    assert low <= point - half + 1e-9 and high >= point + half - 1e-9
    assert low < min(ratios) and high > max(ratios)
    # two pairs: no t-widening (one degree of freedom), the bootstrap alone
    two = hierarchical_ratio_ci(pairs[:2], resamples=400, seed=3)
    assert two[1] - two[0] < 2 * half


def test_pooled_ratio_is_the_ratio_of_pooled_medians():
    pairs = [([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]), ([4.0, 5.0], [2.0, 2.0])]
    assert pooled_ratio(pairs) == statistics.median([1.0, 2.0, 3.0, 4.0, 5.0]) / 1.0


def test_blocks_of_short_calls_last_the_target_so_the_allowance_is_a_small_fraction_of_a_call():
    assert calls_per_block(10, 5.0, 20.0, 1000) == 10  # long calls: the option's block stands
    assert calls_per_block(10, 0.1, 20.0, 1000) == 200
    assert calls_per_block(10, 0.001, 20.0, 1000) == 1000  # capped
    assert calls_per_block(10, None, 20.0, 1000) == 10
    for wall in (0.05, 0.1, 0.2, 0.5, 1.0):
        block = calls_per_block(10, wall, 20.0, 1000)
        assert 2.0 / block <= 0.1 * wall + 1e-12  # the 2 ms per block allowance: <= 10 % of a baseline call


def test_quick_mode_keeps_one_pair_and_the_full_protocol_two():
    assert Options.build({"quick": True}).process_pairs == 1
    assert Options.build({}).process_pairs == 2 and Options.build({}).pairs_below_ms == 1.0
    assert Options.build({"quick": True, "process_pairs": 2}).process_pairs == 2


def test_a_short_problem_is_timed_in_two_process_pairs_on_request(evaluate):
    record = evaluate("linear_bn", "linear_bn_correct", process_pairs=2, max_process_pairs=2, pairs_below_ms=1000.0)
    validate_result(record)
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    timing = record["timing"]
    assert len(timing["pairs"]) == 2, timing.get("process_pairs_policy")
    assert all(p["calls"] > 0 and p["speedup"] > 0 for p in timing["pairs"])
    assert "holding each of the 2 process pairs" in timing["ci_method"]
    low, high = record["speedup_ci"]
    assert low <= record["speedup"] <= high or record["timing"]["wallclock"] is None
    assert timing["candidate"]["calls"] == sum(p["calls"] for p in timing["pairs"])  # pooled
    # the FP32 baseline is timed in the first pair only, and its speedup scales the pooled TF32 one
    assert 0 < timing["baseline_fp32"]["calls"] <= timing["pairs"][0]["calls"] < timing["candidate"]["calls"]
    assert record["speedup_fp32"] > 0 and "first process pair" in timing["flags"]["baseline_fp32"]
    assert "pair_2_start" in record["phases"] and "timing_loop_pair_2" in record["phases"]
    assert record["params_randomised"] is True
    for name in ("timed_output_recheck", "timer_integrity", "thread_count"):
        assert next(c for c in record["checks"] if c["name"] == name)["passed"] is True, name
    # what each phase ran under survives the later pair, whose workers never ran correctness (null: not run)
    flags = record["environment"]["precision_flags"]
    fp32 = {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False, "float32_matmul_precision": "highest"}
    tf32 = {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True, "float32_matmul_precision": "high"}
    assert flags["correctness"] == {"reference": fp32, "candidate": fp32}, flags
    assert flags["timing"] == {"reference": tf32, "candidate": tf32, "reference_fp32": fp32}, flags


def test_pairs_that_disagree_get_more_pairs_up_to_the_limit(evaluate):
    """pair_agreement 0: any difference between pairs counts as disagreement, so the harness adds pairs until
    max_process_pairs; the interval is then the pairs' t-interval, holding every pair but one set aside as a
    deviant process (pair_interval.deviant_pair)."""
    record = evaluate(
        "linear_bn",
        "linear_bn_correct",
        process_pairs=2,
        max_process_pairs=3,
        pair_agreement=0.0,
        pairs_below_ms=1000.0,
    )
    assert record["status"] == "ok", record["error"]
    timing = record["timing"]
    assert len(timing["pairs"]) == 3, timing["process_pairs_policy"]
    assert "t-interval" in timing["ci_method"] and "3 run" in timing["process_pairs_policy"]
    low, high = record["speedup_ci"]
    kept = [p["speedup"] for p in timing["pairs"] if not p.get("set_aside")]
    # The interval is centred on the kept pairs' median; a busy CPU can make the fresh-input or wall-clock check
    # scale every speedup figure afterwards (seen in CI: fresh calls slow, 0.4x), so compare it to the pairs in
    # the interval's own units: scaled back by the record's speedup over the pairs' median.
    factor = record["speedup"] / math.exp(statistics.median(math.log(x) for x in kept))
    assert len(kept) >= 2
    assert low / factor <= min(kept) * (1 + 1e-9) and high / factor >= max(kept) * (1 - 1e-9), (kept, factor)


def test_pairs_that_agree_stop_at_the_first_two(evaluate):
    record = evaluate(
        "linear_bn",
        "linear_bn_correct",
        process_pairs=2,
        max_process_pairs=4,
        pair_agreement=100.0,
        ci_target=0.0,  # and no width rule (two pairs' t-interval, one degree of freedom, is wide on a busy CPU)
        pairs_below_ms=1000.0,
    )
    assert record["status"] == "ok", record["error"]
    assert len(record["timing"]["pairs"]) == 2, record["timing"]["process_pairs_policy"]


def test_a_long_problem_stays_in_one_pair(evaluate):
    record = evaluate("relu", "relu_correct", process_pairs=2, pairs_below_ms=0.0)
    assert record["status"] == "ok", record["error"]
    assert len(record["timing"]["pairs"]) == 1 and "one process pair" in record["timing"]["ci_method"]
    assert record["timing"]["block_calls"] >= 5
    # host times are a CUDA signal (a CPU call's time is host time): none on the CPU, and the record says so
    host = record["timing"]["host_fraction"]
    assert host["baseline_tf32"] is None and host["candidate"] is None and "CUDA only" in host["method"]
    assert "host time of at least 50% of the event time on either side" in record["timing"]["process_pairs_policy"]


REDTEAM = Path(__file__).resolve().parents[1] / "redteam"


def _crosscheck(block: int, reported_ms: float, real_ms: float, base_ms: float = 0.15) -> dict:
    """The wall-clock cross-check on blocks of `block` calls: the baseline reports what it spends, the candidate a
    part of it (both see 0.3 ms per block of pipe round trip and +-0.2 ms of jitter)."""
    record = Record(speedup=base_ms / reported_ms, checks=[])
    timing: dict = {}
    outer = {"tf32": [], "cand": []}
    for i in range(20):
        jitter = 0.2 * ((i * 7) % 5 - 2) / 2
        outer["tf32"].append((block * base_ms + 0.3 + jitter, block * base_ms, block))
        outer["cand"].append((block * real_ms + 0.3 - jitter, block * reported_ms, block))
    walls = {"tf32": [base_ms] * block, "cand": [reported_ms] * block}
    wallclock_crosscheck(record, timing, walls, outer, reported_ms, Options.build({"quick": True}))
    return record.to_dict()


def test_the_allowance_hid_a_short_kernel_under_reporting_until_blocks_were_sized():
    """A 0.15 ms call reported as a quarter of itself (exploits/a5_underreport_short_kernel.py): 0.11 ms a call
    unexplained. Blocks of 5 calls allow 0.02 + 2/5 = 0.42 ms a call; blocks sized to 20 ms of 0.15 ms calls
    (134 calls) allow 0.02 + 0.015 ms."""
    block = calls_per_block(5, 0.15, 20.0, 1000)
    assert block == 134
    before, after = _crosscheck(5, 0.0375, 0.15), _crosscheck(block, 0.0375, 0.15)
    assert before["checks"][0]["passed"] is True and before["speedup"] == 4.0  # the old hole
    assert after["checks"][0]["passed"] is False
    assert after["speedup"] == pytest.approx(1.0, abs=0.05)  # the orchestrator's clock
    assert _crosscheck(block, 0.15, 0.15)["checks"][0]["passed"] is True  # an honest kernel still passes


def test_a_short_kernel_that_under_reports_its_time_is_caught_on_cpu(tmp_path):
    """The red-team case itself, through the harness (quick mode: blocks sized to 20 ms)."""
    record = run_evaluation(
        problem_source=(REDTEAM / "problems" / "small_matmul.py").read_text(),
        kernel_source=(REDTEAM / "exploits" / "a5_underreport_short_kernel.py").read_text(),
        device="cpu",
        timeout=120,
        work_root=tmp_path / "work",
        options={"quick": True},
    )
    assert record["status"] == "ok" and record["correct"] is True, record["error"]
    crosscheck = next(c for c in record["checks"] if c["name"] == "wallclock_crosscheck")
    assert crosscheck["passed"] is False, crosscheck["detail"]
    # the speedup is taken from the orchestrator's clock (near 1x on a quiet machine; a loaded one moves it)
    assert record["speedup"] <= record["timing"]["wallclock"]["speedup_orchestrator_clock"] * 1.000001
