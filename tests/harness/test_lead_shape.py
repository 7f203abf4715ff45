"""The launch lead's grid (harness/workers/lead.py) fills every thread slot of every SM, whatever the GPU: a slot
left free would let another kernel's block run behind the lead, untimed. Pure arithmetic: runs on the CPU."""

from __future__ import annotations

import pytest

from evaluator.harness.workers.lead import LaunchLead, lead_shape


@pytest.mark.parametrize(
    ("sms", "per_sm", "per_block", "expected"),
    [
        (132, 2048, 1024, (264, 1024)),  # H200 / H100 SXM (measured: 264 blocks of 1024)
        (108, 2048, 1024, (216, 1024)),  # A100
        (58, 1536, 1024, (116, 768)),  # an Ada GPU: 1536 threads per SM
        (16, 1024, 1024, (16, 1024)),
        (10, 2048, 512, (40, 512)),
    ],
)
def test_the_lead_fills_every_thread_slot(sms, per_sm, per_block, expected):
    blocks, threads = lead_shape(sms, per_sm, per_block)
    assert (blocks, threads) == expected
    assert blocks * threads == sms * per_sm and threads <= min(per_block, 1024) and threads % 32 == 0


def test_no_lead_on_cpu_or_when_switched_off():
    assert not LaunchLead("cpu", 100.0).enabled and LaunchLead("cpu", 100.0).detail == "no launch lead"
    LaunchLead("cpu", 100.0)()  # calling a disabled lead does nothing
