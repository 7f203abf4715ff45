"""What the phases of one evaluation share: the spec and options, the record being filled, the clock, the two
worker clients, and what one phase learns for a later one (device info, byte sizes, the kernel's state entries).

The phases (setup_phase.py, correctness_phase.py, timing_phase.py, verdict.py) are functions of this one object,
so what each reads and writes is visible at its call site in evaluation.py. stdlib only, like the orchestrator.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluator.harness import seeds as seeds_mod
from evaluator.harness.orchestrator.clients import CandidateClient, Deadline, Gate, ReferenceClient, no_gate
from evaluator.harness.orchestrator.compile_cache import CacheEntry
from evaluator.harness.protocol import Options, Record, Spec
from evaluator.harness.sandbox.launch import Folders, Workers

Emit = Callable[[dict[str, Any]], None]


@dataclass(eq=False)
class Context:
    spec: Spec
    opts: Options
    emit: Emit
    record: Record  # typed while it is filled; JSON only where it is printed (protocol.result_to_json)
    deadline: Deadline
    folders: Folders
    workers: Workers
    # set once the workers run (evaluation.EvaluationRun.connect); no phase runs before
    ref: ReferenceClient = field(init=False)
    cand: CandidateClient = field(init=False)
    seeds: list[int] = field(default_factory=list)  # every seed drawn
    # Every seed derives from this one (seeds.py): the spec's `seeds` option (a reproduction) or a fresh one.
    master_seed: str = ""
    seed_draws: int = 0
    # runtime signals gathered over every call; verdict.py turns them into checks
    flags: dict[str, bool] = field(
        default_factory=lambda: {"plain": True, "alias": False, "unchanged": True, "shape_dtype": True}
    )
    flag_details: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)  # the reference worker's device_info()
    kernel_source: str = ""
    kernel_sha: str | None = None
    state_entries: list[Any] = field(default_factory=list)  # ModelNew's state dict: [name, shape, dtype]
    footprint: int | None = None  # one input set + output, from a meta-device forward
    counts: dict[str, Any] | None = None  # the problem's FLOPs and bytes (flops.py), for the speed of light
    cache: CacheEntry | None = None  # the compile-cache entry, locked from compile to release
    ipc: bool = False  # outputs come back on the device (cuda_fd or cuda_ipc), else through files in folders.io
    output_bytes: int = 0  # the largest reference output and input set seen in correctness (sizes timing sets)
    input_bytes: int = 0
    timing_sets: int = 0
    params_seed: int | None = None  # the seed of the randomised parameters: a later process pair re-creates them
    fresh_base_times: list[float] = field(default_factory=list)
    fresh_times: list[float] = field(default_factory=list)
    # held around each worker command: under the shared GPU hold, the device is taken for one command at a time
    # (gpu_holds.GpuHolds.command), so a timer waits for one command, not for a whole phase, to drain
    gate: Gate = no_gate

    def __post_init__(self) -> None:
        self.master_seed = seeds_mod.check(self.opts.seeds) if self.opts.seeds else seeds_mod.draw()

    @property
    def device(self) -> str:
        return self.spec.device

    @property
    def cuda(self) -> bool:
        return self.spec.device.startswith("cuda")

    def left(self) -> float:
        return self.deadline.left()

    def seed(self, label: str = "") -> int:
        """The next secret seed; a labelled one (a correctness trial) is the same whatever was drawn before it, so
        a reproduction from the master meets the same inputs. The candidate learns a seed only when it is used."""
        self.seed_draws += 1
        value = seeds_mod.derive(self.master_seed, label or f"n{self.seed_draws}")
        self.seeds.append(value)
        return value

    def phase(self, name: str, started: float) -> None:
        self.record.phases[name] = round(time.monotonic() - started, 3)

    def release_outputs(self) -> None:
        if self.ipc:  # cuda_ipc keeps exported outputs alive until now; cuda_fd frees older buffers here
            self.cand.release()


def output_ref(desc: Any, path: str) -> dict[str, Any]:
    """What the reference needs to read one published output; the path is always ours, never the kernel's."""
    return {"desc": desc if isinstance(desc, dict) else {}, "path": path}
