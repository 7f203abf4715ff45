"""Kept timed outputs waiting for their re-check against the clean reference, outside the exclusive GPU hold.
stdlib only, like the orchestrator.

A timed block's outputs are kept (one random call per input set, timing.time_calls) and, for a block the orchestrator
chose before it ran, handed over right after it (the candidate cannot tell which blocks are checked). Their re-check
runs the reference and compares: GPU work that is not a timed loop, so it waits for the shared hold (after the loops,
or in a pause of them that gives the exclusive hold back once too many outputs wait).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from evaluator.harness.orchestrator.context import Context
from evaluator.harness.orchestrator.timed_outputs import recheck_outputs

# Kept timed outputs waiting for their re-check hold device memory: at most this many bytes of them (at least one
# block's), then the loops pause for a re-check under the shared hold.
PENDING_RECHECK_BYTES = 1 << 30
MAX_PENDING_BLOCKS = 4

Hold = Callable[[str], AbstractContextManager[str]]  # gpu_holds.GpuHolds.hold: the GPU in a mode for a block


class PendingRechecks:
    """Kept timed outputs waiting for their re-check against the clean reference (timed_outputs.recheck_outputs).
    The re-checks run under the shared hold, after the timed loops or, once more than PENDING_RECHECK_BYTES of
    outputs (or MAX_PENDING_BLOCKS blocks) wait, in a pause of the loops that gives the exclusive hold back."""

    def __init__(self, ctx: Context, hold: Hold) -> None:
        self.ctx, self.hold = ctx, hold
        self.waiting: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.results: dict[str, dict[str, Any] | None] = {}
        self.paused_s = 0.0
        per_block = max(ctx.timing_sets * ctx.output_bytes, 1)
        self.max_blocks = max(1, min(MAX_PENDING_BLOCKS, PENDING_RECHECK_BYTES // per_block))

    def add(self, tag: str, saved: dict[str, Any], paths: dict[str, str]) -> None:
        self.waiting.append((tag, saved, paths))
        if len(self.waiting) >= self.max_blocks:
            step = time.monotonic()
            with self.hold("shared"):
                self.flush()
            self.paused_s += time.monotonic() - step

    def flush(self) -> None:
        for tag, saved, paths in self.waiting:
            self.results.update(recheck_outputs(self.ctx, tag, saved, paths, release=False))
        if self.waiting:
            self.ctx.release_outputs()
        self.waiting = []
