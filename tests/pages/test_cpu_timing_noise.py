"""On a CPU, the timing checks that compare clocks do not accuse: the page says plainly that CPU figures are not
evidence, a failed fresh_input_timing or wallclock_crosscheck reads "noisy on a CPU" (not a red fail), and the
runtime flag it raised reads "CPU timing: not evidence" (not "Suspected", no "flagged" badge). On a GPU the same
failure stays a failure and a suspicion."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluator.models import AuditFlag
from evaluator.services.audit import kernel_audit_runtime
from tests.factories import AuditFlagFactory, ProblemFactory
from tests.pipeline.helpers import record

pytestmark = pytest.mark.django_db


def noisy_record(device_kind: str, *, timer_broken: bool = False) -> dict:
    rec = record(speedup=0.78)
    rec["timing"]["device_kind"] = device_kind
    rec["checks"] = [
        {"name": "output_plain_tensor", "passed": True, "detail": "every output was a plain torch.Tensor"},
        {"name": "fresh_input_timing", "passed": False, "detail": "3 calls on never-seen inputs: median 0.19 ms"},
        {"name": "wallclock_crosscheck", "passed": False, "detail": "unexplained time per call +0.09 ms"},
        {"name": "timer_integrity", "passed": not timer_broken, "detail": "timer replaced"},  # no clock comparison
    ]
    return rec


def evaluated(add_sample, name: str, hardware: str, *, timer_broken: bool = False):
    rec = noisy_record("cpu" if hardware == "cpu" else "cuda", timer_broken=timer_broken)
    evaluation = add_sample(name, ProblemFactory(), speedup=0.78, hardware=hardware, result=rec)
    kernel_audit_runtime(evaluation_id=evaluation.pk, enqueue_judges=False)  # the flags the pipeline raises
    return evaluation


def badges(html: str, check: str) -> str:
    checks = html.split('<table class="checks')[1].split("</table>")[0]
    return checks.split(f'data-check="{check}"')[1].split("</tr>")[0]


def test_cpu_timing_checks_do_not_accuse(client, add_sample):
    evaluation = evaluated(add_sample, "cpu-llm", "cpu")
    assert AuditFlag.objects.filter(kernel=evaluation.kernel, source_name="runtime:fresh_input_timing").exists()
    html = client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()
    assert 'id="cpu-not-evidence"' in html and "CPU figures are not evidence." in html
    for check in ("fresh_input_timing", "wallclock_crosscheck"):
        row = badges(html, check)
        assert "noisy on a CPU" in row and "badge-bad" not in row, check
    flags = html.split('id="flags-heading"')[1].split("</section>")[0]
    for rule in ("fresh_input_timing", "timing_crosscheck"):
        article = flags.split(f"<code>runtime:{rule}</code>")[0].rsplit("<article", 1)[1]
        assert "CPU timing: not evidence" in article and "Suspected" not in article, rule
    llm_page = client.get(reverse("leaderboard:llm-detail", args=[evaluation.kernel.llm_id]), {"hardware": "cpu"})
    row = llm_page.content.decode().split(f"inspect #{evaluation.kernel_id}")[0].rsplit("<tr", 1)[1]
    assert ">flagged<" not in row


def test_on_a_gpu_the_same_failures_still_count(client, add_sample):
    evaluation = evaluated(add_sample, "gpu-llm", "h200")
    html = client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()
    assert 'id="cpu-not-evidence"' not in html and "noisy on a CPU" not in html
    assert "badge-bad" in badges(html, "fresh_input_timing") and "CPU timing: not evidence" not in html


def test_a_cpu_kernel_with_a_real_suspicion_is_still_flagged(client, add_sample):
    evaluation = evaluated(add_sample, "cpu-llm", "cpu", timer_broken=True)
    html = client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()
    assert "badge-bad" in badges(html, "timer_integrity")  # a replaced timer is no clock noise: it still fails
    AuditFlagFactory(kernel=evaluation.kernel, source="rule", source_name="shape_guard", verdict="suspicious",
                     severity="high", raw=None)  # fmt: skip
    AuditFlag.objects.filter(kernel=evaluation.kernel, source="runtime", source_name="runtime:timer_tampering").delete()
    llm_page = client.get(reverse("leaderboard:llm-detail", args=[evaluation.kernel.llm_id]), {"hardware": "cpu"})
    row = llm_page.content.decode().split(f"inspect #{evaluation.kernel_id}")[0].rsplit("<tr", 1)[1]
    assert ">flagged<" in row
