"""The inspector's figures agree with each other and say what they are: a speedup that does not count says so
before the figure."""

from __future__ import annotations

import math
import re
import statistics
from html import unescape

import pytest
from django.urls import reverse

from leaderboard.templatetags.kb_format import times
from tests.factories import ProblemFactory
from tests.pipeline.helpers import record

pytestmark = pytest.mark.django_db


def inspector(client, evaluation) -> str:
    return client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()


def speedup_card(html: str) -> str:
    return html.split('id="speedup-card"')[1].split("</div>")[0]


def test_a_failed_kernel_says_not_counted_before_its_figure(client, add_sample):
    failed = record(speedup=0.343)
    failed["correct"] = False
    evaluation = add_sample(
        "wrong", ProblemFactory(), speedup=0.343, correct=False, result=failed, speedup_ci_low=0.3, speedup_ci_high=0.4
    )
    card = speedup_card(inspector(client, evaluation))
    assert card.index("Not counted") < card.index("0.343×")  # the verdict on the figure first, then the figure
    assert "did not pass the verified gate" in card
    assert '<strong class="speedup">' not in card  # never bold, as a counted figure is


def test_a_counted_kernel_has_no_not_counted_note(client, add_sample):
    evaluation = add_sample("right", ProblemFactory(), speedup=1.25, result=record(speedup=1.25))
    card = speedup_card(inspector(client, evaluation))
    assert "Not counted" not in card and '<strong class="speedup">1.25×</strong>' in card


def _paired_cpu_record(*, speedups, fresh_factor):
    """A CPU record timed in process pairs whose fresh-input check lowered the timed figure, as the harness writes
    one (timing_record.py): per-side statistics pooled over the pairs, each pair's ratio, the checks' details."""
    rec = record(speedup=None)
    pooled_cand, pooled_base = 0.0487, 0.0393  # pooled medians whose ratio (0.807) is not the headline
    timed = math.exp(statistics.median(math.log(s) for s in speedups))
    headline = timed * fresh_factor
    rec["timing"].update(
        candidate={"median_ms": pooled_cand, "iqr_ms": 0.004, "mean_ms": 0.05, "calls": 900, "rse": 0.01},
        baseline_tf32={"median_ms": pooled_base, "iqr_ms": 0.003, "mean_ms": 0.04, "calls": 900, "rse": 0.01},
        pairs=[
            {"pair": n, "baseline_tf32_median_ms": 0.04, "candidate_median_ms": 0.04 / s, "speedup": s, "calls": 300}
            for n, s in enumerate(speedups, 1)
        ],
        wallclock={"candidate_synced_median_ms": 0.05, "speedup_wallclock": 0.8, "candidate_ratio": 1.0},
        precision={"ci_target": 0.02, "ci_half_width": 0.04, "met": False},
        host_fraction={"baseline_tf32": None, "candidate": None, "method": "CUDA only"},
        candidate_fresh_inputs={"median_ms": 0.19, "calls": 3, "rounds": 1},
    )
    rec["checks"] = [
        {"name": "output_plain_tensor", "passed": True, "detail": "every output was a plain torch.Tensor"},
        {
            "name": "fresh_input_timing",
            "passed": False,
            "detail": "3 calls on never-seen inputs: median 0.19 ms vs 0.0487 ms rotating; speedup taken from the"
            f" fresh-input calls ({fresh_factor:.3g}x)",
        },
    ]
    rec["environment"]["limits"] = {"host_memory_bytes": 8589934592, "fsize_bytes": 17179869184, "nproc": 4218}
    for d in rec["distributions"]:
        d.update(atol=1e-3, rtol=1e-3, worst_ratio=0.0, beyond_tolerance=0, elements=262144)
    rec["speedup"], rec["speedup_ci"], rec["speedup_fp32"] = headline, [headline * 0.98, headline * 1.02], headline
    return rec, timed, headline


def test_one_headline_figure_traced_to_the_timed_calls_and_the_correction(client, add_sample):
    rec, timed, headline = _paired_cpu_record(speedups=[0.78, 0.81, 0.85], fresh_factor=0.254)
    evaluation = add_sample("paired", ProblemFactory(), speedup=headline, hardware="cpu", result=rec)
    html = inspector(client, evaluation)
    origin = unescape(re.sub(r"<[^>]+>", "", html.split('id="speedup-origin">')[1].split("</p>")[0]))
    assert f"Where {times(headline)} comes from: the median of 3 process pairs' ratios" in origin
    assert f"{times(timed)}, then lowered by fresh_input_timing" in origin and "×0.254" in origin
    # The check says the same factor as a factor, not as a speedup of its own.
    assert "(the timed figure ×0.254)" in html and "(0.254x)" not in html
    # The pooled medians are said not to be the figure's source.
    assert "not the ratio of these pooled medians" in html


def test_timing_rows_hold_figures_bytes_read_as_sizes_and_exact_outputs_as_exact(client, add_sample):
    rec, _, headline = _paired_cpu_record(speedups=[0.9, 1.1], fresh_factor=1.0)
    evaluation = add_sample("rows", ProblemFactory(), speedup=headline, hardware="cpu", result=rec)
    html = inspector(client, evaluation)
    table = html.split('id="timing-sides">')[1].split("</table>")[0]
    rows = re.findall(r'<tr data-side="(\w+)">(.*?)</tr>', table, re.S)
    assert [key for key, _ in rows] == ["candidate", "baseline_tf32", "baseline_fp32", "candidate_fresh_inputs"]
    for key, cells in rows:  # every row has its median: no row of dashes (wallclock, precision, ... are detail)
        assert re.search(r'<td class="num">[0-9.]+\u202f(?:µs|ms)</td>', cells), key
    detail = html.split('id="timing-detail"')[1].split("</details>")[0]
    assert "<code>wallclock</code>" in detail and "<code>precision</code>" in detail
    assert "host_fraction" not in detail  # nothing but nulls: nothing to say
    env = html.split('id="env-heading"')[1]
    assert "8.0\u202fGiB" in env and "16.0\u202fGiB" in env and "8589934592" not in env
    assert "0× its allowance" not in html and "exact: every element equals the reference" in html
    assert "Not measured: a CPU run measures no device memory" not in html  # this record has peaks
