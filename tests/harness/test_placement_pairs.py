"""A big problem's speed can depend on where its buffers land in device memory, which depends on what other
processes held when they were placed: one 3D transposed convolution (L1/68) ran 6 % slower in processes that
placed their buffers while another process held 68-132 GiB, and stayed slow after it let go; alone, its processes
agree within 0.04 % (benchmarks/results/placement-h200.md). One process pair cannot see that, so a problem otherwise
timed in one pair gets a second when other evaluations held device memory as its first pair was placed; the
record says beside how many, from the memory ledger (never from a worker)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.harness.gpu_memory import MemoryLedger
from evaluator.harness.orchestrator.pair_policy import PairSamples, pairs_wanted
from evaluator.harness.protocol import Options
from tests.harness.conftest import following

MB = 1 << 20


def _first_pair(base_ms: float, neighbours: tuple[int, int]) -> PairSamples:
    times = {"tf32": [base_ms] * 20, "cand": [base_ms] * 20}
    return PairSamples(times, {}, {}, [], neighbours=neighbours)


def _beside_options(locks: Path) -> dict[str, Any]:
    """A CPU evaluation admitted by memory: 20 MB declared of a 100 MB budget, a long problem (pairs_below_ms 0)
    given a second pair when placed beside another."""
    return {
        "gpu_lock_dir": str(locks),
        "gpu_memory_budget_mb": 100,
        "gpu_memory_reserve_mb": 20,
        "pairs_below_ms": 0.0,
        "placement_pairs": 2,
        "max_process_pairs": 2,
    }


def _evaluate_beside(
    evaluate: Callable[..., dict[str, Any]], locks: Path, neighbour_mb: int, follow: Callable[[threading.Event], None]
) -> dict[str, Any]:
    """A long problem evaluated beside a neighbour holding `neighbour_mb` of the 100 MB budget, while follow(stop)
    watches the ledger from another thread."""
    with MemoryLedger(locks, "cpu").reserve(neighbour_mb * MB, 100 * MB, time.monotonic() + 5):
        locks.mkdir(exist_ok=True)
        with following(follow):
            return evaluate("relu", "relu_correct", **_beside_options(locks))


def test_a_long_problem_placed_beside_others_gets_a_second_pair_and_alone_one():
    opts = Options.build({})
    assert pairs_wanted(_first_pair(34.0, (0, 0)), {}, opts) == 1
    assert pairs_wanted(_first_pair(34.0, (3, 60 << 30)), {}, opts) == opts.placement_pairs == 2
    # the other rules stand: a short problem its process_pairs, a launch-bound one its launch_bound_pairs
    assert pairs_wanted(_first_pair(0.4, (3, 60 << 30)), {}, opts) == opts.process_pairs
    assert pairs_wanted(_first_pair(34.0, (3, 60 << 30)), {"cand": 0.9}, opts) == opts.launch_bound_pairs
    # off, and in quick mode
    assert pairs_wanted(_first_pair(34.0, (3, 60 << 30)), {}, Options.build({"placement_pairs": 1})) == 1
    assert Options.build({"quick": True}).placement_pairs == 1


def test_a_second_pair_only_beside_declarations_of_at_least_placement_beside_gib():
    """With a threshold, neighbours that declared less than it leave a long problem at one pair; at or above it,
    two. Nobody beside it is one pair whatever the threshold (0 GiB declared is not 'beside others')."""
    opts = Options.build({"placement_beside_gib": 32.0})
    assert pairs_wanted(_first_pair(34.0, (5, 31 << 30)), {}, opts) == 1
    assert pairs_wanted(_first_pair(34.0, (1, 32 << 30)), {}, opts) == 2
    assert pairs_wanted(_first_pair(34.0, (0, 0)), {}, Options.build({"placement_beside_gib": 0.0})) == 1
    # the other rules do not read the threshold: a short problem beside little still gets its process pairs
    assert pairs_wanted(_first_pair(0.4, (1, 1 << 30)), {}, opts) == opts.process_pairs


def test_the_harness_runs_a_second_pair_only_beside_another_evaluation(evaluate, tmp_path):
    """The real harness on CPU with a memory budget: a long problem (pairs_below_ms 0) alone is timed in one pair;
    while another evaluation holds memory in the ledger, in two, and each pair's row says beside whom it was
    placed."""
    locks = tmp_path / "locks"
    options = _beside_options(locks)
    alone = evaluate("relu", "relu_correct", **options)
    assert alone["status"] == "ok", alone["error"]
    assert len(alone["timing"]["pairs"]) == 1, alone["timing"]["process_pairs_policy"]
    assert alone["timing"]["pairs"][0]["placed_beside"] == {"evaluations": 0, "declared_bytes": 0}
    with MemoryLedger(locks, "cpu").reserve(40 * MB, 100 * MB, time.monotonic() + 5):
        beside = evaluate("relu", "relu_correct", **options)
    assert beside["status"] == "ok", beside["error"]
    timing = beside["timing"]
    assert len(timing["pairs"]) == 2, timing["process_pairs_policy"]
    assert timing["pairs"][0]["placed_beside"] == {"evaluations": 1, "declared_bytes": 40 * MB}
    assert "held device memory (at least 0 GiB declared): 2" in timing["process_pairs_policy"]
    assert "pair_2_start" in beside["phases"]


def test_a_later_pair_starts_with_its_declaration_cut_and_waits_to_grow_it_back(evaluate, tmp_path):
    """While a later pair starts (old workers ending, new ones importing torch and building the reference) the
    evaluation declares only what a start holds (declared_memory.start_bytes: nothing on the CPU) but stays in the
    ledger: another evaluation that arrives then is admitted, and the pair waits to grow its declaration back until
    that one lets go; the record says how long (pair_starts[].memory_wait_s, in phases.gpu_memory_wait, not in the
    start)."""
    locks = tmp_path / "locks"
    seen: list[tuple[int, int]] = []

    def arrive_during_the_start(stop: threading.Event) -> None:
        """Follow the ledger; once the evaluation's declaration has been cut (its 20 MB gone, both still there),
        take 70 MB, which leaves no room for its 20 again, and let go 1 s after it began to wait."""
        ledger = MemoryLedger(locks, "cpu")
        while not stop.is_set():
            count, held = ledger.others()
            if not seen or seen[-1] != (count, held // MB):
                seen.append((count, held // MB))
            if seen[-2:] == [(2, 40), (2, 20)]:
                with ledger.reserve(70 * MB, 100 * MB, time.monotonic() + 5):
                    while not ledger.waiting() and not stop.is_set():
                        time.sleep(0.005)
                    time.sleep(1.0)
                return
            time.sleep(0.005)

    record = _evaluate_beside(evaluate, locks, 20, arrive_during_the_start)
    assert record["status"] == "ok", record["error"]
    # the neighbour; the evaluation's declaration beside it; its later pair's start (nothing on the CPU)
    assert seen[:3] == [(1, 20), (2, 40), (2, 20)], seen
    [start] = record["timing"]["pair_starts"]
    assert start["memory_wait_s"] >= 1.0, start
    assert 0 < start["ended_s"] < start["seconds"], start  # the old pair's end, then the start with the cut
    assert record["phases"]["gpu_memory_wait"] >= start["memory_wait_s"]
    assert record["phases"]["pair_2_start"] < start["memory_wait_s"] + start["seconds"]
    assert len(record["timing"]["pairs"]) == 2


def _live_workers() -> set[int]:
    """The worker processes (and the sandbox's wrappers of the candidate) of this Python environment alive now
    (zombies left out): their command line names a worker module and this environment's interpreter (the launcher
    serves several runs of the suite at once)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if b"harness.workers." in cmdline and sys.prefix.encode() in cmdline and _alive(int(entry.name)):
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """Is `pid` running (not gone, not a zombie)?"""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_later_pair_cuts_its_declaration_only_once_the_old_pair_is_gone(evaluate, tmp_path):
    """The old pair's workers hold the evaluation's whole footprint on the device until they exit: cut before,
    the ledger let another evaluation in beside memory they still held (on an H100 a neighbour's kernel ran out of
    memory, classed crowded out). Watched from another thread: when the declaration drops, the first pair's
    workers have ended."""
    locks = tmp_path / "locks"
    first_pair: set[int] = set()
    at_cut: list[set[int]] = []

    def watch(stop: threading.Event) -> None:
        ledger = MemoryLedger(locks, "cpu")
        while not stop.is_set() and not at_cut:
            held = ledger.others()[1] if locks.exists() else 0
            if held == 60 * MB and not first_pair:  # the neighbour's 40 and the evaluation's 20
                first_pair.update(_live_workers())
            elif first_pair and held == 40 * MB:  # cut to a start's (nothing on the CPU): are they still there?
                at_cut.append({pid for pid in first_pair if _alive(pid)})
            time.sleep(0.0005)

    record = _evaluate_beside(evaluate, locks, 40, watch)
    assert record["status"] == "ok", record["error"]
    assert len(record["timing"]["pairs"]) == 2
    assert first_pair and at_cut, (first_pair, at_cut)
    assert not at_cut[0], "the declaration was cut while the old pair's workers still ran"
