"""How many process pairs an evaluation's timing runs, and how much of its timing budget each may spend: what one
pair collected (PairSamples), the launch-bound test, the width and agreement rules, the budget split. Pure
functions of what the pairs measured and the options; timing_phase.py applies them. stdlib only.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from evaluator.harness.orchestrator.timing_record import OuterBlocks, Samples
from evaluator.harness.pair_interval import log_ratio_interval
from evaluator.harness.protocol import Options
from evaluator.harness.timing import ratios_disagree

# The interval-width rule adds pairs only below this many: it resolves two pairs' one degree of freedom. Beyond
# three, only disagreement adds pairs: a fourth pair to narrow an interval that three agree on cost 0.5 pairs per
# evaluation for 1.5 % less width, and stopping on a narrow interval lowered coverage (96-97 % -> 92-95 %, at 1 %
# between-process spread; benchmarks/results/log-interval-coverage.md).
WIDTH_RULE_PAIRS = 3


@dataclass
class PairSamples:
    """What one process pair's timed blocks collected (timing_phase._timed_blocks)."""

    times: Samples
    walls: Samples
    outer: OuterBlocks
    forged: list[str]
    rechecks: dict[str, Any] = field(default_factory=dict)
    host: Samples = field(default_factory=dict)  # side -> per-call host ms (CUDA; see host_fractions)
    busy: dict[str, list[float]] = field(default_factory=dict)  # baseline side -> [kernel's CPU ms, wall ms]
    pinned: dict[str, int] = field(default_factory=dict)  # worker -> threads pinned to the timing CPU
    cpu: int | None = None  # the timing CPU its timed blocks ran on (None: unpinned)
    cpu_why: str = ""
    stopped: str = ""  # why its timed blocks stopped (timing_phase._timed_blocks)
    # Other evaluations holding memory on the device, and their declared bytes, when its buffers were placed (its
    # timing set-up; gpu_holds.GpuHolds.others): where they land, and so a big problem's speed, depends on it.
    neighbours: tuple[int, int] = (0, 0)
    loop_s: float = 0.0  # seconds its timed blocks took (the evaluation's timing budget is shared: pair_budget_s)


def pair_budget_s(opts: Options, spent_s: float, done: int, wanted: int) -> float:
    """The timed-loop budget of the next process pair. `timing_budget_s` is the evaluation's, over all its pairs:
    the first pair may spend half of it (most problems need only one pair, and most stop on precision well before);
    a later pair an equal share of what is left among the pairs still wanted. A pair's own precision matters less
    once there are several: their spread, not their calls, then sets the interval. The budget is checked only
    after the minimum calls and blocks, so a pair always times that much."""
    if done == 0:
        return opts.timing_budget_s / 2
    return max(opts.timing_budget_s - spent_s, 0.0) / max(wanted - done, 1)


def host_fractions(pair: PairSamples) -> dict[str, float]:
    """Per side (TF32 baseline, candidate; CUDA only): the median call's host time (until it returned) over its
    median event time. Near 1 or above, the call is launch-bound: the GPU waits for the host, so the call runs at
    the speed of its process's host, which differs between processes like the latency the launch lead hides
    (measured: one launch-bound L3 problem timed 0.76x-1.14x against itself in five evaluations of one pair each)."""
    fractions = {}
    for side in ("tf32", "cand"):
        host = [h for h in pair.host.get(side, []) if math.isfinite(h) and h >= 0]
        times = [t for t in pair.times.get(side, []) if math.isfinite(t)]
        if host and times and statistics.median(times) > 0:
            fractions[side] = statistics.median(host) / statistics.median(times)
    return fractions


def pairs_wanted(first: PairSamples, host: dict[str, float], opts: Options) -> int:
    """Process pairs to start with: opts.launch_bound_pairs (at least opts.process_pairs) for a launch-bound call
    on either side (host time at least opts.host_bound_fraction of the event time), opts.process_pairs for a short
    problem (the TF32 baseline's median below opts.pairs_below_ms), else opts.placement_pairs when other
    evaluations held device memory (at least opts.placement_beside_gib of declarations) while the first pair placed
    its buffers (where they land sets a big problem's speed per process), else one. A candidate's own figure can
    only add pairs for itself: a forged one gains no speed; the neighbours are read from the memory ledger, not
    from a worker."""
    if any(fraction >= opts.host_bound_fraction for fraction in host.values()):
        return max(opts.process_pairs, opts.launch_bound_pairs)
    base = first.times["tf32"]
    if base and statistics.median(base) < opts.pairs_below_ms:
        return opts.process_pairs
    return max(opts.placement_pairs, 1) if placed_beside_enough(first.neighbours, opts.placement_beside_gib) else 1


def placed_beside_enough(neighbours: tuple[int, int], least_gib: float) -> bool:
    """Were the first pair's buffers placed beside other evaluations (the ledger's count and declared bytes) holding
    enough for where they landed to matter (opts.placement_beside_gib)? The bundle replay decides by it too."""
    evaluations, declared = neighbours
    return evaluations > 0 and declared >= least_gib * 2**30


def wider_than_target(pairs: list[PairSamples], opts: Options) -> bool:
    """Is the speedup's interval from these pairs (timing.log_ratio_interval, the calls' precision taken from their
    robust errors) wider than opts.ci_target, with fewer than WIDTH_RULE_PAIRS pairs? Two pairs give one degree of
    freedom: they stop there only when they agree within about ci_target / 8; else a third pair runs."""
    if opts.ci_target <= 0 or len(pairs) >= WIDTH_RULE_PAIRS:
        return False
    made = log_ratio_interval([(p.times["tf32"], p.times["cand"]) for p in pairs], bootstrap=False)
    return made is not None and math.expm1(made.half) > opts.ci_target


def pairs_disagree(pairs: list[PairSamples], agreement: float) -> bool:
    """timing.ratios_disagree over the pairs' TF32-baseline and candidate calls."""
    return ratios_disagree([(p.times["tf32"], p.times["cand"]) for p in pairs], agreement)
