"""torch.compile in the product: the stored torch.compile baseline of a problem on a hardware kind.

`speedup_compile` is not timed per evaluation (harness option `compile_baseline`, off in the pipeline: compiling the
reference costs minutes per problem). Pages compare the kernel's paired median with the stored compiled median
instead (Baseline rows of precision `compile`: the sweep imported by `import_baselines --precisions compile`, or
aggregated from evaluations that did time it), labelled as such: a different process and time, not paired.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evaluator.models import Baseline


@dataclass(frozen=True)
class StoredCompile:
    median_ms: float
    torch_version: str
    evaluations: int  # paired evaluations aggregated into it (0: the imported sweep alone)

    def speedup(self, kernel_ms: float | None) -> float | None:
        """Stored compiled median / the kernel's median (> 1: faster than torch.compile)."""
        if kernel_ms is None or kernel_ms <= 0:
            return None
        return self.median_ms / kernel_ms


def stored_compile_baselines(pairs: Iterable[tuple[int, str]]) -> dict[tuple[int, str], StoredCompile]:
    """{(problem_id, hardware): the newest stored torch.compile baseline}, one query for all pairs."""
    wanted = set(pairs)
    if not wanted:
        return {}
    rows = Baseline.objects.filter(
        precision=Baseline.Precision.COMPILE,
        problem_id__in={p for p, _ in wanted},
        hardware__in={h for _, h in wanted},
    ).order_by("measured_at")
    out: dict[tuple[int, str], StoredCompile] = {}
    for row in rows:  # newest last, so it wins
        key = (row.problem_id, row.hardware)
        if key in wanted and row.median_ms > 0:
            out[key] = StoredCompile(row.median_ms, row.torch_version, row.evaluations)
    return out
