"""How often does the timing phase's interval hold the true speedup of a launch-bound problem? (issue 17, part 2)

A simulation with the harness's own functions (`timing.hierarchical_ratio_ci`, `pooled_ratio`) and its stopping
rule (`timing.ratios_disagree`: add pairs while their speedups spread by more than `pair_agreement`, up to
`max_process_pairs`).
Each process pair gets a host speed factor per side, drawn with the between-process spread measured on the H200 for
L3/20 (MobileNetV2: the same code at 3.8-5.3 ms in ten processes, a standard deviation of 10 % and 13 % per side;
process-pairs-h200.md), and `calls` calls per side with 1 % noise. The true speedup is 1.0 (both sides are the same
code). The output says, per starting number of pairs, how many intervals hold 1.0 and how many pairs were run.

    python3 benchmarks/pairs_coverage_sim.py [--evaluations 150] [--spread 0.11]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.harness.timing import hierarchical_ratio_ci, pooled_ratio, ratios_disagree  # noqa: E402


def evaluation(rng: random.Random, spread: float, start: int, most: int, agree: float, calls: int) -> tuple:
    pairs: list[tuple[list[float], list[float]]] = []

    def add() -> None:
        base, cand = 4.3 * (1 + rng.gauss(0, spread)), 4.3 * (1 + rng.gauss(0, spread))
        pairs.append(
            (
                [base * (1 + rng.gauss(0, 0.01)) for _ in range(calls)],
                [cand * (1 + rng.gauss(0, 0.01)) for _ in range(calls)],
            )
        )

    for _ in range(start):
        add()
    while len(pairs) < most and ratios_disagree(pairs, agree):  # the harness's rule (timing_phase.run_timing)
        add()
    ci = hierarchical_ratio_ci(pairs, resamples=300, seed=rng.randrange(1 << 30))
    return pooled_ratio(pairs), ci, len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evaluations", type=int, default=150)
    ap.add_argument("--spread", type=float, default=0.11, help="between-process sd of the host speed, per side")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--agreement", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    for start, most in ((1, 1), (2, 4), (3, 4)):
        rng = random.Random(a.seed)
        runs = [evaluation(rng, a.spread, start, most, a.agreement, a.calls) for _ in range(a.evaluations)]
        held = [ci is not None and ci[0] <= 1.0 <= ci[1] for _, ci, _ in runs]
        points = sorted(p for p, _, _ in runs)
        at_two = [h for h, (_, _, k) in zip(held, runs, strict=True) if k == 2]
        print(
            f"start {start}, at most {most} pairs: interval holds 1.0 in {sum(held)} of {len(runs)} "
            f"({sum(held) / len(runs):.0%}); pairs run {statistics.mean(k for *_, k in runs):.2f} on average; "
            f"speedups 5-95 % {points[len(points) // 20]:.3f}-{points[-1 - len(points) // 20]:.3f}; "
            f"stopped at two {len(at_two)} times, held {sum(at_two)}"
        )


if __name__ == "__main__":
    main()
