"""Launch-bound problems: a call whose GPU waits for the host runs at its process's host speed
(one L3 problem, MobileNetV2 at ~4 ms a call, timed 0.76x-1.14x against itself in five single-pair evaluations on
the H200: benchmarks/results/process-pairs-h200.md). Such calls get process pairs whatever their length; the signal
is each call's host time (until it returned) against its event time."""

from __future__ import annotations

from evaluator.harness.orchestrator.pair_policy import PairSamples, host_fractions, pairs_wanted
from evaluator.harness.orchestrator.timing_phase import _host_times
from evaluator.harness.protocol import Options
from evaluator.harness.timing import time_calls


class _FakeClock:
    """A host clock the test advances: the call below takes exactly `call_ms` of host time."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        self.ns += 1_000  # every read costs 1 us
        return self.ns


class _FakeEvent:
    def __init__(self, enable_timing: bool = True) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = _CLOCK.ns / 1e6

    def elapsed_time(self, end: _FakeEvent) -> float:
        return end.at - self.at


_CLOCK = _FakeClock()


def test_time_calls_records_each_calls_host_time_on_the_cuda_path():
    def call(x):
        _CLOCK.ns += 3_000_000  # 3 ms of host work before it returns
        return x

    host: list[float] = []
    times, walls = time_calls(
        call, [[1]], 4, 0, cuda=True, flush=lambda: None, clock_ns=_CLOCK, event_cls=_FakeEvent,
        synchronize=lambda: None, host=host,
    )  # fmt: skip
    assert len(host) == 4 and all(abs(h - 3.0) < 0.01 for h in host), host
    assert all(t >= 3.0 for t in times)
    # without the list nothing is collected, and the CPU path never collects (its time is host time already)
    cpu_host: list[float] = []
    time_calls(call, [[1]], 2, 0, cuda=False, flush=lambda: None, clock_ns=_CLOCK, host=cpu_host)
    assert cpu_host == []


def _pair(base_ms: float, base_host: float | None, cand_ms: float, cand_host: float | None) -> PairSamples:
    times = {"tf32": [base_ms] * 20, "cand": [cand_ms] * 20}
    host = {side: [] if h is None else [h] * 20 for side, h in (("tf32", base_host), ("cand", cand_host))}
    return PairSamples(times, {}, {}, [], {}, host)


def test_a_launch_bound_call_gets_process_pairs_whatever_its_length():
    opts = Options.build({})
    gpu_bound = _pair(5.0, 0.05, 5.0, 0.05)  # one long GEMM: the host returns at once
    assert host_fractions(gpu_bound) == {"tf32": 0.01, "cand": 0.01}
    assert pairs_wanted(gpu_bound, host_fractions(gpu_bound), opts) == 1
    launch_bound = _pair(4.3, 4.2, 3.8, 3.75)  # ~150 small kernels: the GPU waits for every launch
    # three to start with: two agree by chance too often for their interval to cover (pairs_coverage_sim.py)
    assert pairs_wanted(launch_bound, host_fractions(launch_bound), opts) == opts.launch_bound_pairs == 3
    # the candidate alone launch-bound (many tiny kernels against one GEMM): its own spread needs pairs too
    cand_only = _pair(5.0, 0.05, 4.0, 3.9)
    assert pairs_wanted(cand_only, host_fractions(cand_only), opts) == 3
    # quick mode (tests, demo) keeps one pair unless asked
    assert pairs_wanted(launch_bound, host_fractions(launch_bound), Options.build({"quick": True})) == 1
    # short problems keep their pairs whatever the host does; the CPU (no host times) decides on length alone
    assert pairs_wanted(_pair(0.2, 0.01, 0.2, 0.01), {}, opts) == opts.process_pairs == 2
    cpu = _pair(5.0, None, 5.0, None)
    assert host_fractions(cpu) == {} and pairs_wanted(cpu, {}, opts) == 1
    # the threshold is an option (1.0: only calls whose host time reaches their event time)
    assert pairs_wanted(launch_bound, host_fractions(launch_bound), Options.build({"host_bound_fraction": 1.0})) == 1


def test_a_malformed_or_hostile_host_list_is_ignored():
    assert _host_times({"host": [0.1, 2]}) == [0.1, 2.0]
    for bad in ({}, {"host": "4.0"}, {"host": [1.0, "x"]}, {"host": [True]}, {"host": {"a": 1}}):
        assert _host_times(bad) == []
    # non-finite or negative figures do not count toward the fraction
    pair = _pair(5.0, 0.05, 5.0, 0.05)
    pair.host["cand"] = [float("nan"), -1.0]
    assert "cand" not in host_fractions(pair)
