"""Speed of light on the pages: the fraction, what ran side by side, and torch.compile from the stored
sweep (inspector and leaderboard)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluator.harness.orchestrator.launched import report
from evaluator.harness.orchestrator.roofline import speed_of_light
from evaluator.harness.record import SpeedOfLight
from evaluator.models import Baseline
from tests.factories import BaselineFactory, ProblemFactory

pytestmark = pytest.mark.django_db

DECOY = '__global__ void gelu_kernel(float* x) {}\nload_inline(name="g", cpp_sources="", cuda_sources=src)\n'
BASE = [["void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>(...)", 10.0]]
COUNTS = {"matrix_flops": 0, "vector_flops": 1 << 20, "bytes": 8 << 20, "dtype": "float32"}


def _record(kernel_ms: float, launched: dict | None) -> dict:
    return {
        "status": "ok",
        "correct": True,
        "speedup": 2.0,
        "timing": {"device_kind": "cuda", "candidate": {"median_ms": kernel_ms}},
        "speed_of_light": speed_of_light(COUNTS, "NVIDIA H200", kernel_ms),
        "launched_kernels": launched,
    }


def _get(client, evaluation) -> str:
    return client.get(reverse("inspector:kernel-detail", args=[evaluation.kernel_id])).content.decode()


def test_inspector_shows_fraction_kernels_side_by_side_and_stored_compile(client, add_sample):
    problem = ProblemFactory(level=1, problem_id=26, name="GELU")
    BaselineFactory(problem=problem, hardware="h200", precision=Baseline.Precision.COMPILE, median_ms=0.4)
    launched = report(DECOY, BASE, BASE)
    evaluation = add_sample("decoy", problem, speedup=2.0, result=_record(0.01, launched), candidate_ms=0.01)
    html = _get(client, evaluation)
    bound = 8 * 2**20 / 4.8e12 * 1e3  # memory-bound: 8 MiB at 4.8 TB/s
    assert "How far from the hardware" in html and "H200 SXM" in html and "memory-bound" in html
    assert f"{100 * bound / 0.01:.1f}\u202f%" in html
    assert "faster than the bound" not in html
    assert "data-no-custom-kernel" in html and "gelu_kernel" in html
    assert "vectorized_elementwise_kernel" in html and "100.0\u202f%" in html
    assert "vs torch.compile (stored sweep, not paired)" in html and "40.0×" in html


def test_inspector_flags_faster_than_light_and_says_when_nothing_was_recorded(client, add_sample):
    fast = add_sample("fast", ProblemFactory(), result=_record(0.0001, None), candidate_ms=0.0001)
    html = _get(client, fast)
    assert "faster than the bound" in html
    assert "kernels are profiled on CUDA devices only" in html
    old = add_sample("old", ProblemFactory(), result={"status": "ok", "correct": True})
    html = _get(client, old)
    assert "Not counted" in html and "vs torch.compile" not in html


def test_leaderboard_columns_speed_of_light_and_vs_compile(client, add_sample):
    from leaderboard.selectors.ranking import leaderboard_rows  # noqa: F401 - the page and the API share it

    problem = ProblemFactory(level=1, problem_id=1, name="Matmul")
    BaselineFactory(problem=problem, hardware="h200", precision=Baseline.Precision.TF32, median_ms=1.0)
    BaselineFactory(problem=problem, hardware="h200", precision=Baseline.Precision.COMPILE, median_ms=0.8)
    add_sample("near-light", problem, speedup=2.5, result=_record(0.4, None), candidate_ms=0.4)
    html = client.get(reverse("leaderboard:index"), {"hardware": "h200", "problem_set": problem.problem_set}).content
    html = html.decode()
    row = html.split('data-name="near-light"')[1].split("</tr>")[0]
    bound = 8 * 2**20 / 4.8e12 * 1e3
    assert f"{100 * bound / 0.4:.1f}\u202f%" in row.split('data-col="sol"')[1]
    assert "2.00×" in row.split('data-col="compile"')[1]
    api = client.get("/api/leaderboard/", {"hardware": "h200", "problem_set": problem.problem_set}).json()
    llm = next(r for r in api["rows"] if r["name"] == "near-light")
    assert llm["vs_compile"] == pytest.approx(2.0) and llm["sol_fraction"] == pytest.approx(bound / 0.4)


def test_count_flops_command_and_the_first_record_store_the_problems_work():
    from django.core.management import call_command

    from evaluator.services.work import problem_work_from_record

    counted = ProblemFactory(level=1, problem_id=90)
    broken = ProblemFactory(level=1, problem_id=91, source="raise RuntimeError('no meta')\n")
    call_command("count_flops")
    counted.refresh_from_db()
    broken.refresh_from_db()
    assert counted.flops == 16 * 16 and counted.bytes_moved == 2 * 16 * 16 * 4  # ReLU on 16x16 fp32
    assert counted.work_counts["dtype"] == "float32" and broken.bytes_moved is None
    problem_work_from_record(problem_id=broken.pk, speed_of_light=SpeedOfLight(flops=10, bytes=20, matrix_flops=10))
    problem_work_from_record(problem_id=counted.pk, speed_of_light=SpeedOfLight(flops=1, bytes=1))  # counted: kept
    broken.refresh_from_db()
    counted.refresh_from_db()
    assert (broken.flops, broken.bytes_moved, broken.work_counts) == (10, 20, {"matrix_flops": 10})
    assert counted.flops == 256
