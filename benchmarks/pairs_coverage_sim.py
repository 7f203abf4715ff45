"""How often does the timing phase's interval hold the true speedup of a launch-bound problem?

A simulation with the harness's own functions (`timing.hierarchical_ratio_ci`, `pooled_ratio`) and its stopping
rule (add pairs while their speedups spread by more than `pair_agreement` (`timing.ratios_disagree`) or the
log-scale interval is wider than `ci_target` (`pair_policy.wider_than_target`), up to `max_process_pairs`).
Each process pair gets a host speed factor per side, drawn with the between-process spread measured on the H200 for
L3/20 (MobileNetV2: the same code at 3.8-5.3 ms in ten processes, a standard deviation of 10 % and 13 % per side;
process-pairs-h200.md), and `calls` calls per side with 1 % noise. The true speedup is 1.0 (both sides are the same
code). The output says, per starting number of pairs, how many intervals hold 1.0 and how many pairs were run.

Two intervals side by side: the earlier one (`hierarchical_ratio_ci`: bootstrap over pairs then calls, on the
ratio) and the one the harness reports now (`log_ratio_interval`: on the log scale from the pairs' medians, around
their median), with each one's median width (high / low) and, for the new one, how often it reached 0 (never, by
construction) and how often the evaluation would be called `timing unstable` (`pairs_unstable` with
--unstable-agreement, when the pairs ran out). `--deviant P`: each pair is, with probability P, one process slowed
2x on one side (a neighbour's start-up beside it): the median ignores one such pair, the pooled ratio does not.

    python3 benchmarks/pairs_coverage_sim.py [--evaluations 150] [--spread 0.11] [--deviant 0.1]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.harness.orchestrator.pair_policy import WIDTH_RULE_PAIRS
from evaluator.harness.pair_interval import interval_unstable, log_ratio_interval
from evaluator.harness.timing import hierarchical_ratio_ci, pooled_ratio, ratios_disagree


def wider(pairs: list[tuple[list[float], list[float]]], target: float) -> bool:
    """pair_policy.wider_than_target on plain pairs."""
    if target <= 0 or len(pairs) >= WIDTH_RULE_PAIRS:
        return False
    made = log_ratio_interval(pairs, bootstrap=False)
    return made is not None and math.expm1(made.half) > target


def evaluation(
    rng: random.Random,
    spread: float,
    start: int,
    most: int,
    agree: float,
    calls: int,
    deviant: float = 0.0,
    target: float = 0.0,
) -> tuple:
    pairs: list[tuple[list[float], list[float]]] = []

    def add() -> None:
        base, cand = 4.3 * (1 + rng.gauss(0, spread)), 4.3 * (1 + rng.gauss(0, spread))
        if rng.random() < deviant:  # one process slowed 2x, on either side
            if rng.random() < 0.5:
                base *= 2
            else:
                cand *= 2
        pairs.append(
            (
                [base * (1 + rng.gauss(0, 0.01)) for _ in range(calls)],
                [cand * (1 + rng.gauss(0, 0.01)) for _ in range(calls)],
            )
        )

    for _ in range(start):
        add()
    while start > 1 and len(pairs) < most and (ratios_disagree(pairs, agree) or wider(pairs, target)):
        # the harness's rule (timing_phase.run_timing)
        add()
    ci = hierarchical_ratio_ci(pairs, resamples=300, seed=rng.randrange(1 << 30))
    made = log_ratio_interval(pairs, resamples=300, seed=rng.randrange(1 << 30))
    assert made is not None
    unstable = len(pairs) > 1 and bool(interval_unstable(log_ratio_interval(pairs, bootstrap=False)))
    return pooled_ratio(pairs), ci, len(pairs), made.speedup, [made.low, made.high], unstable


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evaluations", type=int, default=150)
    ap.add_argument("--spread", type=float, default=0.11, help="between-process sd of the host speed, per side")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--agreement", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deviant", type=float, default=0.0, help="chance a pair has one side slowed 2x")
    ap.add_argument("--ci-target", type=float, default=0.02, help="0: pairs added on disagreement only (before)")
    a = ap.parse_args()
    for start, most in ((1, 1), (2, 4), (3, 4)):
        rng = random.Random(a.seed)
        runs = [
            evaluation(rng, a.spread, start, most, a.agreement, a.calls, a.deviant, a.ci_target)
            for _ in range(a.evaluations)
        ]
        held = [ci is not None and ci[0] <= 1.0 <= ci[1] for _, ci, *_ in runs]
        points = sorted(r[0] for r in runs)
        at_two = [h for h, r in zip(held, runs, strict=True) if r[2] == 2]
        print(
            f"start {start}, at most {most} pairs: interval holds 1.0 in {sum(held)} of {len(runs)} "
            f"({sum(held) / len(runs):.0%}); pairs run {statistics.mean(r[2] for r in runs):.2f} on average; "
            f"speedups 5-95 % {points[len(points) // 20]:.3f}-{points[-1 - len(points) // 20]:.3f}; "
            f"stopped at two {len(at_two)} times, held {sum(at_two)}"
        )
        old_width = statistics.median(ci[1] / ci[0] if ci and ci[0] > 0 else float("inf") for _, ci, *_ in runs)
        log_held = [ci[0] <= 1.0 <= ci[1] for *_, ci, _ in runs]
        new_points = sorted(r[3] for r in runs)
        zero = sum(ci[0] <= 0 for *_, ci, _ in runs)
        unstable = [r[5] for r in runs]
        stable_held = [h for h, u in zip(log_held, unstable, strict=True) if not u]
        print(
            f"    log-scale interval: holds 1.0 in {sum(log_held)} of {len(runs)} ({sum(log_held) / len(runs):.0%}); "
            f"median width x{statistics.median(ci[1] / ci[0] for *_, ci, _ in runs):.3f} (earlier x{old_width:.3f}); "
            f"reaching 0: {zero}; point 5-95 % {new_points[len(new_points) // 20]:.3f}-"
            f"{new_points[-1 - len(new_points) // 20]:.3f}; timing unstable {sum(unstable)}, the others hold 1.0 in "
            f"{sum(stable_held)} of {len(stable_held)}"
        )


if __name__ == "__main__":
    main()
