"""The launch lead (harness/workers/lead.py): the host's latency to a call's first kernel is not timed, and work a
call puts on a side stream cannot run, untimed, behind the lead. Skipped without CUDA; runs on the GPU machine with
`python3 -m pytest tests/harness/test_gpu_lead.py`."""

from __future__ import annotations

import statistics
import time

import pytest

torch = pytest.importorskip("torch")

from evaluator.harness.timing import time_calls  # noqa: E402
from evaluator.harness.workers.l2 import L2Flusher  # noqa: E402
from evaluator.harness.workers.lead import LaunchLead  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _slow_host_call(x):
    """60 us of host work before the first kernel (a heavy Python prologue; the latency the lead hides)."""
    end = time.perf_counter() + 60e-6
    while time.perf_counter() < end:
        pass
    return x * 2


def _median_event_ms(lead):
    x = torch.rand(1 << 20, device="cuda")
    times, walls = time_calls(
        _slow_host_call, [[x]], 60, 0, cuda=True, flush=L2Flusher("cuda"), clock_ns=time.perf_counter_ns,
        event_cls=torch.cuda.Event, synchronize=torch.cuda.synchronize, lead=lead,
    )  # fmt: skip
    return statistics.median(times), statistics.median(walls)


def test_the_lead_keeps_the_hosts_latency_out_and_what_outlasts_it_in():
    without, wall_without = _median_event_ms(None)
    assert without > 0.055  # the 60 us prologue is timed when the start event fires on an idle GPU
    lead = LaunchLead("cuda", 200.0)
    assert lead.enabled, lead.detail
    with_lead, wall_with = _median_event_ms(lead)
    assert with_lead < without - 0.04, (with_lead, without)
    assert wall_with < wall_without - 0.04, (wall_with, wall_without)  # the wall leaves the lead itself out
    # a lead shorter than the prologue: the host time beyond it is still timed
    short, _ = _median_event_ms(LaunchLead("cuda", 20.0))
    assert short > 0.03 and short > with_lead + 0.02, (short, with_lead)


def _side_kernel_finish(lead_fn):
    """Lead on the current stream, start event behind it, then work on a high-priority side stream that does not
    wait for the current stream: (ms from lead launch to the start event, ms to the side work's end)."""
    low, high = torch.cuda.Stream.priority_range() if hasattr(torch.cuda.Stream, "priority_range") else (0, -1)
    side = torch.cuda.Stream(priority=min(low, high))
    x = torch.rand(1 << 16, device="cuda")
    with torch.cuda.stream(side):  # the side kernel loaded and its stream warm: a lazy first load would wait
        for _ in range(3):
            x * 3
    lead_fn()  # the lead's kernel loaded too: a first call of torch.cuda._sleep loads its module for milliseconds
    torch.cuda.synchronize()
    mark, start, done = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    mark.record()
    lead_fn()
    start.record()
    with torch.cuda.stream(side):
        y = x * 3
        done.record(side)
    torch.cuda.synchronize()
    del y
    return mark.elapsed_time(start), mark.elapsed_time(done)


def test_side_stream_work_waits_for_the_lead_to_end():
    lead = LaunchLead("cuda", 300.0)
    assert lead.enabled, lead.detail
    to_start, to_side = _side_kernel_finish(lead)
    assert to_start > 0.25
    assert to_side >= to_start - 0.01, (to_start, to_side)  # no thread slot was free before the lead ended
    # the control: a lead of one spinning thread (torch.cuda._sleep) leaves the SMs free, the side work runs behind
    # it, before the start event; what the full lead prevents
    to_start, to_side = _side_kernel_finish(lambda: torch.cuda._sleep(600_000))
    assert to_side < to_start - 0.1, (to_start, to_side)


def test_no_lead_when_switched_off():
    assert not LaunchLead("cuda", 0.0).enabled  # launch_lead_us 0: the start event fires on an idle GPU
