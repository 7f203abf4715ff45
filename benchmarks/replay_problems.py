"""What the bundle replay (replay_bundle.py) knows of each problem before any GPU run: its meta-device counts
(evaluator/harness/workers/flops.count_namespace: input, output, parameter and one forward's peak bytes) and how
many operators one forward dispatches, from which it derives each evaluation's declared memory the way the harness
does (orchestrator/declared_memory.reservation_bytes, and the rule before 2026-12-04 that bundle-3 ran under).

The counts need torch and take minutes on the CPU (cuDNN RNNs run step by step on the meta device), so they are
computed once and kept in benchmarks/results/replay-problems.json; the replay itself needs the standard library only.

    python3 benchmarks/replay_problems.py [--out benchmarks/results/replay-problems.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evaluator.harness.orchestrator.declared_memory import CUDA_WORKER_BYTES, reservation_bytes  # noqa: E402

PROBLEMS = HERE.parent / "leaderboard" / "data" / "kernelbench" / "problems.jsonl"
TABLE = HERE / "results" / "replay-problems.json"
GIB = 2**30
# The declaration bundle-3 (2026-12-04) ran under, before flops.PeakBytes: each worker its CUDA context, the
# parameters, and input_sets + 2 input sets with their outputs with a 25 % margin (git show 0bbbc15).
OLD_FOOTPRINT_MARGIN = 1.25


def declared_bytes(counts: dict[str, Any] | None, capacity: int, rule: str = "peak", input_sets: int = 3) -> int:
    """What an evaluation of this problem declares to the memory ledger on a CUDA device. `rule` "peak": today's
    (declared_memory.reservation_bytes); "io": bundle-3's. Unknown counts declare the whole capacity (run alone)."""
    if not counts:
        return capacity
    footprint = int(counts["input_bytes"]) + int(counts["output_bytes"])
    if rule == "peak":
        peak = int(counts.get("peak_bytes") or 0)
        return reservation_bytes(
            footprint=footprint,
            peak_bytes=peak,
            input_sets=input_sets,
            capacity=capacity,
            cuda=True,
            output_bytes=int(counts["output_bytes"]),
            param_bytes=int(counts.get("param_bytes") or 0),
        )
    per_worker = CUDA_WORKER_BYTES + int(counts["param_bytes"]) + (input_sets + 2) * footprint * OLD_FOOTPRINT_MARGIN
    return min(int(2 * per_worker), capacity)


def baseline_ms(precision: str = "fp32") -> dict[str, float]:
    """Each problem's baseline median on the H200 from the committed sweeps (bundle_gpu.BASELINES, a later sweep's
    figure replacing an earlier one's), by bundle key."""
    from benchmarks.bundle_gpu import BASELINES

    out: dict[str, float] = {}
    for sweep in (path for path in BASELINES if path.exists()):
        for line in sweep.read_text().splitlines():
            row = json.loads(line)
            ms = ((row.get("precisions") or {}).get(precision) or {}).get("median_ms")
            if ms:
                out[f"L{row.get('level')}/{row.get('problem_id')}"] = float(ms)
    return out


def load_table(path: Path = TABLE) -> dict[str, dict[str, Any] | None]:
    """The committed counts, by bundle key ("L1/36"); {} when the file is absent."""
    return json.loads(path.read_text()) if path.exists() else {}


def count_all(levels: tuple[int, ...] = (1, 2, 3)) -> dict[str, dict[str, Any] | None]:
    """Every problem's counts and dispatched operators per forward (torch needed)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from evaluator.harness.workers.flops import count_namespace
    from evaluator.harness.workers.inputs import load_problem

    class OpCount(TorchDispatchMode):
        """Operators one forward dispatches (launches, roughly: a launch-bound model dispatches many small ones)."""

        def __init__(self) -> None:
            super().__init__()
            self.ops = 0
            self.counting = False  # in the forward only: building the model dispatches operators too

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.ops += self.counting
            return func(*args, **(kwargs or {}))

    def counted(model_class: Any, ops: OpCount) -> Any:
        def build(*init: Any) -> Any:
            model = model_class(*init)
            forward = model.forward

            def counting_forward(*args: Any, **kwargs: Any) -> Any:
                ops.counting = True
                try:
                    return forward(*args, **kwargs)
                finally:
                    ops.counting = False

            model.forward = counting_forward
            return model

        return build

    table: dict[str, dict[str, Any] | None] = {}
    for line in PROBLEMS.read_text().splitlines():
        problem = json.loads(line)
        if problem["level"] not in levels:
            continue
        key = f"L{problem['level']}/{problem['problem_id']}"
        started = time.monotonic()
        try:
            ns = load_problem(problem["source"])
            with OpCount() as ops:
                counts = count_namespace({**ns, "Model": counted(ns["Model"], ops)})
        except Exception:  # an estimate only, like flops.count_source
            counts = None
        if counts is not None:
            counts = {k: counts[k] for k in ("input_bytes", "output_bytes", "param_bytes", "peak_bytes")}
            # operators per forward, and the seconds the count took here (the reference worker counts at set-up,
            # and again in each later process pair: minutes for cuDNN RNNs, which run step by step on meta)
            counts.update(ops=ops.ops, count_s=round(time.monotonic() - started, 1))
        table[key] = counts
        print(f"{key:7} {time.monotonic() - started:6.1f} s {counts}", flush=True)
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    table = count_all()
    args.out.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    print(f"{len(table)} problems, {sum(v is None for v in table.values())} not countable on the meta device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
