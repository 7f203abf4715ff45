"""The bundle replay (benchmarks/replay_bundle.py) keeps the GPU's rules on small synthetic evaluations: timers never
hold the device at once, a slot runs one evaluation at a time, declared memory never passes the capacity, and one slot
runs its evaluations back to back; and the work read from a row is its phases without the time it queued."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from benchmarks.replay_model import Job, Policy, Segment
from benchmarks.replay_sim import Outcome, simulate
from benchmarks.replay_work import deflate, job_of, row_pieces

GIB = 2**30


def synthetic_jobs(count: int, seed: int = 1, gib: tuple[int, int] = (1, 40)) -> list[Job]:
    """Evaluations of one to four pairs with random work in every role and a random declaration."""
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        pairs = rng.choice([1, 1, 2, 4])
        segments = [Segment("prep", rng.uniform(0, 2)), Segment("admit")]
        segments.append(Segment("correctness", rng.uniform(0.5, 6), gpu_s=rng.uniform(0, 3)))
        for pair in range(pairs):
            if pair:
                segments.append(Segment("pair_start", rng.uniform(5, 15)))
            segments += [Segment("setup", rng.uniform(0.1, 2), gpu_s=0.1), Segment("loop", rng.uniform(0.5, 3))]
            segments += [Segment("loop_other", 0.05), Segment("recheck", rng.uniform(0, 1))]
        segments += [Segment("checks", rng.uniform(0, 2)), Segment("profile", rng.uniform(2, 5), gpu_s=0.2)]
        segments += [Segment("shutdown", 0.3), Segment("release")]
        declared = rng.randint(*gib) * GIB
        jobs.append(Job(f"J{i}", "x", declared, declared // 8, rng.uniform(5, 12), segments, pairs=pairs))
    return jobs


def work_of(job: Job) -> float:
    return job.spawn + sum(s.work for s in job.segments)


POLICIES = {
    "today": Policy(slots=8, capacity=60 * GIB),
    "two GPUs, no standbys": Policy(slots=6, gpus=2, prestart=False, capacity=50 * GIB),
    "the old rule": Policy(slots=6, exclusive="timing", alone_above_mb=1024, shared_holds="phase", capacity=None),
}


@pytest.mark.parametrize("name", POLICIES)
def test_timers_never_hold_a_gpu_at_once(name: str) -> None:
    trace: list[Any] = []
    outcomes, totals = simulate(synthetic_jobs(40), POLICIES[name], trace)
    held = sorted((gpu, start, end, key) for kind, gpu, key, start, end in trace if kind == "exclusive")
    assert held and all(o.status == "ok" for o in outcomes)
    for (gpu_a, _, end_a, key_a), (gpu_b, start_b, _, key_b) in zip(held, held[1:], strict=False):
        assert gpu_a != gpu_b or start_b >= end_a - 1e-9 or key_a == key_b
    assert totals["exclusive_s"] == pytest.approx(sum(end - start for _, start, end, _ in held))


@pytest.mark.parametrize("name", POLICIES)
def test_a_slot_runs_one_evaluation_at_a_time(name: str) -> None:
    outcomes, _ = simulate(synthetic_jobs(40, seed=2), POLICIES[name])
    by_slot: dict[int | None, list[Outcome]] = {}
    for out in outcomes:
        by_slot.setdefault(out.slot, []).append(out)
    assert len(by_slot) == POLICIES[name].slots * POLICIES[name].gpus
    for runs in by_slot.values():
        runs.sort(key=lambda o: o.start or 0.0)
        for before, after in zip(runs, runs[1:], strict=False):
            assert (after.start or 0.0) >= (before.end or 0.0) - 1e-9


def test_declared_memory_never_passes_the_capacity() -> None:
    capacity = 50 * GIB
    jobs = synthetic_jobs(40, seed=3, gib=(5, 45))
    jobs[5].declared = 80 * GIB  # more than the device: it runs alone
    trace: list[Any] = []
    outcomes, totals = simulate(jobs, Policy(slots=8, capacity=capacity), trace)
    memory = [entry for entry in trace if entry[0] == "memory"]
    assert max(held for _, _, _, held, _ in memory) <= capacity
    assert any(admitted > 1 for *_, admitted in memory)  # evaluations did share the device
    assert totals["evaluated"] == 40 and sum(o.memory_wait for o in outcomes) > 0
    alone = next(o for o in outcomes if o.key == "J5")
    overlapping = [
        o
        for o in outcomes
        if o is not alone and (o.start or 0) < (alone.end or 0) and (o.end or 0) > (alone.start or 0)
    ]
    assert alone.memory_wait > 0 and overlapping  # it waited while others ran, then ran with the device to itself
    admitted_with_it = [
        adm for _, _, t, _, adm in memory if (alone.start or 0) + alone.memory_wait <= t < (alone.end or 0)
    ]
    assert admitted_with_it and max(admitted_with_it) == 1


@pytest.mark.parametrize("old_rule", [False, True])
def test_one_slot_runs_back_to_back(old_rule: bool) -> None:
    jobs = synthetic_jobs(12, seed=4)
    policy = Policy(slots=1, prestart=False, capacity=60 * GIB)
    if old_rule:
        policy = Policy(slots=1, prestart=False, exclusive="timing", alone_above_mb=1024, capacity=None)
    outcomes, totals = simulate(jobs, policy)
    assert totals["wall_s"] == pytest.approx(sum(work_of(j) for j in jobs))
    assert sum(o.lock_wait + o.memory_wait for o in outcomes) == 0


def test_more_slots_overlap_host_work_but_keep_the_timers_in_turn() -> None:
    jobs = synthetic_jobs(30, seed=5)
    _, one = simulate(jobs, Policy(slots=1, prestart=False, drain_s=0.0, capacity=60 * GIB))
    _, eight = simulate(jobs, Policy(slots=8, prestart=False, drain_s=0.0, capacity=60 * GIB))
    loops = sum(s.work for j in jobs for s in j.segments if s.role in ("loop", "loop_other"))
    assert loops <= eight["wall_s"] < one["wall_s"]
    assert eight["exclusive_s"] == pytest.approx(loops)


def test_the_old_rule_holds_big_problems_alone() -> None:
    jobs = synthetic_jobs(20, seed=6)
    _, today = simulate(jobs, Policy(slots=6, capacity=None))
    _, old = simulate(jobs, Policy(slots=6, capacity=None, alone_above_mb=1024, exclusive="timing"))
    assert today["exclusive_timing_share"] > 0.9 > old["exclusive_timing_share"]
    assert old["exclusive_s"] > today["exclusive_s"]


ROW = {
    "key": "L9/1",
    "phase": "evaluate",
    "status": "ok",
    "wall_s": 60.0,
    "ended_at_s": 60.0,
    "fp32_ms": 10.0,
    "pairs": [{"pair": 1}, {"pair": 2}],
    "phases": {
        "workers": 10.0,
        "start": 12.0,
        "compile": 0.0,
        "gpu_memory_wait": 5.0,
        "correctness": 8.0,
        "timing": 24.2,  # 22 s named, 2 s queued for the exclusive hold, 0.2 s of the hold beyond the loops
        "timing_setup": 1.0,
        "timing_loop": 2.0,
        "timing_recheck": 1.0,
        "pair_2_start": 11.0,
        "timing_setup_pair_2": 1.0,
        "timing_loop_pair_2": 1.0,
        "timing_recheck_pair_2": 1.0,
        "timing_checks": 4.0,
        "profile": 6.0,
        "shutdown": 1.0,
        "gpu_wait": 6.0,  # 2 s before the timed loops, 4 s inside the shared phases
        "exclusive_s": 3.2,
        "total": 56.2,
    },
}


def test_a_rows_work_is_its_phases_without_its_waits() -> None:
    work = row_pieces(ROW)
    assert sum(x.wait for x in work.pieces) == pytest.approx(4.0)
    assert sum(x.seconds for x in work.pieces if x.role == "wait") == pytest.approx(5.0 + 2.0)
    deflate([work], [], Policy(), {"L9/1": GIB})  # alone: nothing to divide out
    job = job_of(work, "launch", 2 * GIB, GIB)
    assert job.pairs == 2 and job.spawn == pytest.approx(10.0)
    assert work_of(job) == pytest.approx(56.2 - 5.0 - 6.0)  # the total without the memory and lock waits
    assert sum(s.work for s in job.segments if s.role in ("loop", "loop_other")) == pytest.approx(3.2)
    _, totals = simulate([job], Policy(slots=1, prestart=False, capacity=100 * GIB))
    assert totals["wall_s"] == pytest.approx(56.2 - 11.0)  # alone: no shared command of another to drain


def test_placement_pairs_give_each_one_pair_evaluation_a_later_pair_and_cost_time() -> None:
    from benchmarks.replay_jobs import with_placement_pairs

    jobs = synthetic_jobs(30, seed=7)
    policy = Policy(slots=6, capacity=60 * GIB, later_pair_start_s=9.0)
    placed = [with_placement_pairs(j, Policy(placement_pairs=2, later_pair_start_s=9.0)) for j in jobs]
    for before, after in zip(jobs, placed, strict=True):
        if before.pairs > 1:
            assert after is before  # already several pairs: nothing added
            continue
        prep = sum(s.work for s in before.segments if s.role == "prep")
        loops = [s.work for s in before.segments if s.role in ("loop", "loop_other")]
        assert after.pairs == 2
        assert [s.work for s in after.segments if s.role == "pair_start"] == [pytest.approx(prep + 9.0)]
        assert [s.work for s in after.segments if s.role in ("loop", "loop_other")] == loops * 2
        assert [s.role for s in after.segments][-4:] == ["checks", "profile", "shutdown", "release"]
    _, once = simulate(jobs, policy)
    _, twice = simulate(placed, policy)
    assert twice["exclusive_s"] > once["exclusive_s"] and twice["wall_s"] > once["wall_s"]


def test_placement_pairs_run_only_beside_others_declaring_at_least_the_threshold() -> None:
    """As the harness decides (pair_policy.placed_beside_enough): an evaluation whose first pair is set up with nobody
    else admitted keeps one pair; beside another it runs its later pair, unless the other declared less than
    placement_beside_gib."""
    from benchmarks.replay_jobs import scaled

    pair = [Segment("setup", 1.0), Segment("loop", 1.0), Segment("recheck", 1.0)]
    segments = [Segment("admit"), Segment("correctness", 2.0), *pair, Segment("release")]
    big, small = Job("B", "big", 40 * GIB, GIB, 1.0, list(segments)), Job("S", "small", 8 * GIB, GIB, 1.0, segments)
    base = Policy(slots=2, prestart=False, capacity=100 * GIB, placement_pairs=2, later_pair_start_s=5.0)

    def run(jobs: list[Job], policy: Policy) -> tuple[dict[str, float], dict[str, float]]:
        outcomes, totals = simulate(scaled(jobs, policy), policy)
        assert all(o.status == "ok" for o in outcomes)
        return {o.key: o.loops for o in outcomes}, totals

    loops, totals = run([big], base)  # alone: one pair's loop
    assert loops == {"B": pytest.approx(1.0)} and totals["placement_pairs_run"] == 0
    loops, totals = run([big, small], base)  # beside each other: both run a later pair
    assert loops == {"B": pytest.approx(2.0), "S": pytest.approx(2.0)} and totals["placement_pairs_run"] == 2
    loops, totals = run([big, small], replace(base, placement_beside_gib=16.0))  # only S was beside 16 GiB or more
    assert loops == {"B": pytest.approx(1.0), "S": pytest.approx(2.0)} and totals["placement_pairs_run"] == 1


def test_a_later_pair_repeats_only_the_tf32_and_candidate_share_of_the_timed_loop() -> None:
    from benchmarks.replay_jobs import with_placement_pairs

    pair = [Segment("setup", 2.0), Segment("loop", 4.0), Segment("loop_other", 0.2), Segment("recheck", 1.0)]
    job = Job("L9/2", "big", GIB, GIB, 1.0, [Segment("prep", 3.0), Segment("admit"), *pair, Segment("release")])
    later = with_placement_pairs(replace(job, later_loop_share=0.25), Policy(placement_pairs=2))
    assert [(s.role, s.work) for s in later.segments if s.role in ("setup", "loop", "loop_other", "recheck")] == [
        ("setup", 2.0), ("loop", 4.0), ("loop_other", 0.2), ("recheck", 1.0),
        ("setup", 2.0), ("loop", 1.0), ("loop_other", 0.2), ("recheck", 1.0),
    ]  # fmt: skip


def test_the_later_loop_share_comes_from_the_sweeps_fp32_and_tf32_medians() -> None:
    from benchmarks.replay_jobs import Source

    source = Source.__new__(Source)
    source.tf32_ms, source.call_ms = {"L1/68": 33.6, "L9/9": 1.0}, {"L1/68": 180.0, "L9/9": 1.0}
    assert source.later_loop_share("L1/68") == pytest.approx(2 * 33.6 / (2 * 33.6 + 180.0))
    assert source.later_loop_share("L9/9") == pytest.approx(2 / 3)
    assert source.later_loop_share("L9/404") == 1.0  # no sweep figure: the whole loop again


def test_memory_patience_keeps_a_whole_device_declaration_from_starving() -> None:
    """Small evaluations that fit pass a whole-device one waiting for the device to be empty; with a stream of them it
    waits out its timeout (as L1/36 did on the H200). With a patience, later ones wait behind it and it runs."""
    small = [Segment("admit"), Segment("correctness", 20.0, gpu_s=1.0), Segment("loop", 1.0), Segment("release")]
    jobs = [Job(f"S{i}", "small", 10 * GIB, GIB, 1.0, list(small)) for i in range(3)]
    whole = [Segment("admit"), Segment("correctness", 5.0), Segment("loop", 1.0), Segment("release")]
    jobs.append(Job("W", "whole", 100 * GIB, 60 * GIB, 1.0, whole))
    jobs += [Job(f"T{i}", "small", 10 * GIB, GIB, 1.0, list(small)) for i in range(60)]
    policy = Policy(slots=4, prestart=False, capacity=100 * GIB, timeout=200.0)
    starved, _ = simulate(jobs, policy)
    patient, _ = simulate(jobs, replace(policy, memory_patience_s=30.0))
    assert next(o for o in starved if o.key == "W").status == "timeout"
    served = next(o for o in patient if o.key == "W")
    assert served.status == "ok" and 30.0 < served.memory_wait < 100.0
    assert all(o.status == "ok" for o in patient)


def test_a_memory_wait_after_a_later_pairs_start_is_placed_after_it() -> None:
    row = {**ROW, "pair_starts": [{"pair": 2, "seconds": 11.0, "gpu_hold": "none", "memory_wait_s": 3.0}]}
    pieces = [(x.role, x.seconds) for x in row_pieces(row).pieces]
    before = pieces.index(("correctness", 8.0))
    assert pieces[before - 1] == ("wait", 2.0)  # 5 s of memory waits, 3 of them after the later pair's start
    after = pieces.index(("pair_start", 11.0))
    assert pieces[after + 1] == ("wait", 3.0)


def test_a_later_pairs_start_begins_with_the_old_pair_ending_under_the_whole_declaration() -> None:
    """The harness cuts a later pair's declaration only once its old pair has ended (timing.pair_starts[].ended_s):
    the row's start splits into that end and the rest, and a waiting evaluation is admitted beside the cut one only
    after the end, not when the start begins."""
    from benchmarks.replay_jobs import scaled

    row = {**ROW, "pair_starts": [{"pair": 2, "seconds": 11.0, "ended_s": 1.5, "gpu_hold": "none"}]}
    pieces = [(x.role, x.seconds) for x in row_pieces(row).pieces]
    at = pieces.index(("pair_end", 1.5))
    assert pieces[at + 1] == ("pair_start", 9.5)

    pairs = [Segment("setup", 1.0), Segment("loop", 1.0), Segment("recheck", 1.0)]
    start = [Segment("pair_end", 5.0), Segment("pair_start", 20.0)]
    first = [Segment("admit"), Segment("correctness", 2.0), *pairs, *start, *pairs, Segment("release")]
    second = [Segment("admit"), Segment("correctness", 2.0), *pairs, Segment("release")]
    jobs = [
        Job("A", "launch", 60 * GIB, GIB, 1.0, first, pairs=2, start_bytes=2 * GIB),
        Job("B", "big", 60 * GIB, GIB, 1.0, second),
    ]
    policy = Policy(slots=2, prestart=False, capacity=100 * GIB, pair_start_memory="cut")
    trace: list[Any] = []
    outcomes, _ = simulate(scaled(jobs, policy), policy, trace)
    assert all(o.status == "ok" for o in outcomes)
    memory = [(t, held) for what, _, t, held, _ in trace if what == "memory"]
    cut = next(t for t, held in memory if held == 2 * GIB)
    beside = next(t for t, held in memory if held == 62 * GIB)  # B admitted beside A's cut declaration
    a_loop_end = 1.0 + 2.0 + 3.0  # A's spawn, correctness, first pair (alone on the device)
    assert cut >= a_loop_end + 5.0 - 1e-6 and beside >= cut


def test_a_declaration_cut_for_a_later_pairs_start_lets_a_waiting_evaluation_run_meanwhile() -> None:
    """Two evaluations that do not fit together: with the first's declaration held whole through its later pair's
    start the second waits for all of it; cut to what the start holds, the second runs during the start and the
    first waits to grow back. The device's declarations never pass its capacity."""
    from benchmarks.replay_jobs import scaled

    pairs = [Segment("setup", 1.0), Segment("loop", 1.0), Segment("recheck", 1.0)]
    first = [Segment("admit"), Segment("correctness", 2.0), *pairs, Segment("pair_start", 20.0), *pairs]
    second = [Segment("admit"), Segment("correctness", 2.0), *pairs]
    jobs = [
        Job("A", "launch", 60 * GIB, GIB, 1.0, [*first, Segment("release")], pairs=2, start_bytes=2 * GIB),
        Job("B", "big", 60 * GIB, GIB, 1.0, [*second, Segment("release")]),
    ]
    base = Policy(slots=2, prestart=False, capacity=100 * GIB)
    ends = {}
    for how in ("held", "cut"):
        policy = replace(base, pair_start_memory=how)
        trace: list[Any] = []
        outcomes, _ = simulate(scaled(jobs, policy), policy, trace)
        ends[how] = {o.key: o.end for o in outcomes}
        assert all(o.status == "ok" for o in outcomes)
        memory = [(held, admitted) for what, _, _, held, admitted in trace if what == "memory"]
        assert all(held <= 100 * GIB for held, _ in memory)
        assert ((62 * GIB, 2) in memory) == (how == "cut")  # B beside A's cut declaration
    assert ends["cut"]["B"] < ends["held"]["B"] - 15.0
    assert ends["cut"]["A"] >= ends["held"]["A"]  # the first may wait to grow back


def test_a_cut_declaration_grows_back_past_a_whole_device_waiter_that_waits_for_it() -> None:
    """The whole-device declaration waits for the device to be empty and, past the patience, holds later arrivals
    back; an evaluation growing back after its cut is not one of them, or neither would ever move."""
    from benchmarks.replay_jobs import scaled

    pairs = [Segment("setup", 1.0), Segment("loop", 1.0), Segment("recheck", 1.0)]
    cycling = [Segment("admit"), *pairs, Segment("pair_start", 100.0), *pairs, Segment("release")]
    whole = [Segment("admit"), Segment("correctness", 5.0), Segment("loop", 1.0), Segment("release")]
    jobs = [
        Job("A", "launch", 30 * GIB, GIB, 1.0, cycling, pairs=2, start_bytes=GIB),
        Job("W", "whole", 100 * GIB, 60 * GIB, 1.0, whole),
    ]
    policy = Policy(slots=2, prestart=False, capacity=100 * GIB, timeout=300.0, memory_patience_s=10.0)
    policy = replace(policy, pair_start_memory="cut")
    outcomes, _ = simulate(scaled(jobs, policy), policy)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    a, w = outcomes
    assert a.end is not None and w.start is not None and w.end is not None and w.end > a.end


def test_a_start_admitted_first_waits_before_building_its_reference_and_holds_nothing_meanwhile() -> None:
    """Policy.first_memory "start" (gpu_holds.memory since 12-06): what a start holds is admitted before the workers
    touch the device, so an evaluation that arrives while a whole-device declaration runs waits before building its
    reference (holding nothing), where with the whole declaration admitted after the build it built first. Then it
    grows to its declaration. The device's declarations never pass its capacity."""
    from benchmarks.replay_jobs import scaled

    whole = Job(
        "C", "whole", 100 * GIB, 60 * GIB, 1.0, [Segment("admit"), Segment("correctness", 10.0), Segment("release")]
    )
    late = [Segment("prep", 5.0), Segment("admit"), Segment("correctness", 2.0), Segment("release")]
    jobs = [whole, Job("D", "big", 10 * GIB, GIB, 1.0, late, start_bytes=GIB)]
    ends = {}
    for how in ("after_build", "start"):
        policy = Policy(slots=2, prestart=False, capacity=100 * GIB, first_memory=how)
        trace: list[Any] = []
        outcomes, _ = simulate(scaled(jobs, policy), policy, trace)
        assert [o.status for o in outcomes] == ["ok", "ok"]
        ends[how] = {o.key: o.end for o in outcomes}
        memory = [(held, admitted) for what, _, _, held, admitted in trace if what == "memory"]
        assert all(held <= 100 * GIB for held, _ in memory)
        assert ((GIB, 1) in memory) == (how == "start")  # D's start alone, once C has gone, then its declaration
    assert ends["start"]["C"] == ends["after_build"]["C"]
    assert abs(ends["start"]["D"] - (ends["after_build"]["D"] + 5.0)) < 0.01  # its 5 s build waited too


def test_two_whole_device_evaluations_deadlock_as_starts_grown_later_and_run_admitted_whole() -> None:
    """Both starts admitted beside each other, each whole-device declaration then waits for the other to leave:
    neither moves until killed. Admitted whole before the build (today), the second waits for the first and runs."""
    from benchmarks.replay_jobs import scaled

    def job(key: str) -> Job:
        segments = [Segment("prep", 2.0), Segment("admit"), Segment("correctness", 5.0), Segment("release")]
        return Job(key, "whole", 100 * GIB, 60 * GIB, 1.0, segments, start_bytes=GIB)

    statuses = {}
    for how in ("start", "before_build"):
        policy = Policy(slots=2, prestart=False, capacity=100 * GIB, timeout=60.0, first_memory=how)
        outcomes, _ = simulate(scaled([job("A"), job("B")], policy), policy)
        statuses[how] = [o.status for o in outcomes]
    assert statuses == {"start": ["timeout", "timeout"], "before_build": ["ok", "ok"]}
