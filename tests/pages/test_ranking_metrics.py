"""The leaderboard metrics of docs/protocol.md section 6, computed on small boards whose answers are known by hand."""

from __future__ import annotations

import math

import pytest

from evaluator.models import AuditFlag, Baseline
from leaderboard.selectors.ranking import (
    compute_leaderboard,
    leaderboard_cache_clear,
    leaderboard_data,
    leaderboard_rows,
    sort_rows,
)
from tests.factories import AuditFlagFactory, BaselineFactory, ProblemFactory

pytestmark = pytest.mark.django_db


def board(level=None, hardware="h200"):
    data = compute_leaderboard(hardware=hardware, problem_set="kernelbench-main")
    return {r.name: r for r in data.rows.get(level, [])}


@pytest.fixture
def level1(db):
    return [ProblemFactory(level=1, problem_id=i) for i in range(1, 6)]


def test_best_of_k_correctness_speedup_and_fast_p(add_sample, level1):
    p1, p2, p3, p4, _ = level1
    add_sample("A", p1, 0, speedup=2.0, memory=2.0)
    add_sample("A", p1, 1, speedup=1.0, memory=0.25)  # slower sample of the same problem: not chosen
    add_sample("A", p2, 0, speedup=0.5, memory=0.5)
    add_sample("A", p3, 0, speedup=None, correct=False, memory=None)
    add_sample("A", p4, 0, speedup=4.0, hack=True)  # correct but a confirmed hack: attempted, not correct
    row = board(1)["A"]
    assert (row.attempted, row.correct, row.kernels) == (4, 2, 5)
    assert row.correctness_pct == pytest.approx(50.0)
    assert row.speedup == pytest.approx(math.sqrt(2.0 * 0.5))
    # fast_p over the whole set (5 problems, one never attempted), as KernelBench counts it.
    assert (row.problems, row.coverage_pct) == (5, pytest.approx(80.0))
    assert row.fast_p == pytest.approx({"0": 40.0, "0.5": 20.0, "0.8": 20.0, "1": 20.0, "1.5": 20.0, "2": 0.0})
    # Memory of the chosen samples (2.0 and 0.5), not of the faster-memory slower sample.
    assert row.memory_efficiency == pytest.approx(1.0)
    assert (row.mem_efficient_pct, row.mem_increased_pct) == (50.0, 50.0)


def test_standard_protocol_column_and_inflation(add_sample, level1):
    p1, p2, *_ = level1
    # Verified: only p1 correct at 1.0x. Standard (D1 gate, FP32 baseline): p1 at 2.0x and p2 (hidden-test
    # failure, correct under D1) at 8.0x -> geomean 4.0x, inflation 4.0.
    add_sample("A", p1, speedup=1.0, fp32=2.0)
    add_sample("A", p2, speedup=3.0, fp32=8.0, correct=False, standard=True)
    row = board(1)["A"]
    assert row.speedup == pytest.approx(1.0)
    assert row.standard_speedup == pytest.approx(4.0)
    assert row.standard_correct == 2
    assert row.inflation == pytest.approx(4.0)


def test_inactive_problems_are_excluded_and_listed(add_sample, level1):
    inactive = ProblemFactory(level=2, problem_id=23, active=False, inactive_reason="constant output")
    add_sample("A", level1[0], speedup=2.0)
    add_sample("A", inactive, speedup=50.0)
    data = compute_leaderboard(hardware="h200", problem_set="kernelbench-main")
    overall = {r.name: r for r in data.rows[None]}["A"]
    assert (overall.attempted, overall.correct, overall.speedup) == (1, 1, pytest.approx(2.0))
    assert 2 not in data.rows  # no level-2 row: its only problem is inactive
    assert [(lv, pid, reason) for _, lv, pid, _, reason, _ in data.inactive] == [(2, 23, "constant output")]


def test_levels_overall_and_hardware_are_separate(add_sample, level1):
    l2 = ProblemFactory(level=2, problem_id=1)
    add_sample("A", level1[0], speedup=4.0)
    add_sample("A", l2, speedup=1.0)
    add_sample("A", l2, 1, speedup=9.0, hardware="cpu")
    assert board(1)["A"].speedup == pytest.approx(4.0)
    assert board(2)["A"].speedup == pytest.approx(1.0)
    assert board(None)["A"].speedup == pytest.approx(2.0)
    assert board(None, hardware="cpu")["A"].speedup == pytest.approx(9.0)


def test_only_current_finished_evaluations_count(add_sample, level1):
    add_sample("A", level1[0], speedup=2.0)
    add_sample("A", level1[1], speedup=8.0, is_current=False)  # superseded
    add_sample("A", level1[2], speedup=8.0, status="running")
    row = board(1)["A"]
    assert (row.attempted, row.speedup) == (1, pytest.approx(2.0))


def test_suspected_flags_do_not_remove_a_kernel_but_confirmed_ones_do(add_sample, level1):
    e = add_sample("A", level1[0], speedup=2.0)
    AuditFlagFactory(kernel=e.kernel, review_state=AuditFlag.Review.SUSPECTED)
    assert board(1)["A"].correct == 1
    AuditFlagFactory(kernel=e.kernel, review_state=AuditFlag.Review.CONFIRMED)
    assert board(1)["A"].correct == 0


def test_baseline_rows(add_sample, level1):
    p1, p2, *_ = level1
    add_sample("A", p1, speedup=1.0)
    for p, fp32 in ((p1, 2.0), (p2, 8.0)):
        BaselineFactory(problem=p, precision=Baseline.Precision.TF32, median_ms=1.0, peak_memory_bytes=100)
        BaselineFactory(problem=p, precision=Baseline.Precision.FP32, median_ms=fp32, peak_memory_bytes=100)
    rows = board(1)
    assert rows["PyTorch eager (TF32)"].speedup == pytest.approx(1.0)
    assert rows["PyTorch eager (TF32)"].is_baseline and rows["PyTorch eager (TF32)"].rank is None
    # FP32 eager on the speedup scale: TF32 time / FP32 time = geomean(1/2, 1/8) = 1/4.
    assert rows["PyTorch eager (FP32)"].speedup == pytest.approx(0.25)
    assert rows["PyTorch eager (FP32)"].memory_efficiency == pytest.approx(1.0)
    assert "torch.compile (TF32)" not in rows  # not measured: no row


def test_decomposition_buckets(add_sample, level1):
    p1, p2, p3, p4, p5 = level1
    add_sample("A", p1, speedup=0.8, fp32=1.6, d1=True)  # TF32 flips the verdict
    add_sample("A", p2, speedup=2.0, fp32=4.0, correct=False, d1=True, hidden_fail=True)  # hidden only
    add_sample("A", p3, speedup=0.5, fp32=1.5, correct=False, d1=True, hidden_fail=True)  # both
    add_sample("A", p4, speedup=2.0, fp32=2.5, d1=True)  # neither
    add_sample("A", p5, speedup=None, correct=False, d1=False)  # fails D1: neither
    data = compute_leaderboard(hardware="h200", problem_set="kernelbench-main")
    llm_id = next(iter(data.llms))
    assert dict(data.decomposition[llm_id][1]) == {"tf32_only": 1, "hidden_only": 1, "both": 1, "neither": 2}


def test_sorting_puts_missing_values_last_in_both_directions(add_sample, level1):
    add_sample("A", level1[0], speedup=2.0)
    add_sample("B", level1[0], speedup=3.0)
    add_sample("C", level1[0], speedup=None, correct=False)
    rows = board(1).values()
    assert [r.name for r in sort_rows(rows, "-speedup")] == ["B", "A", "C"]
    assert [r.name for r in sort_rows(rows, "speedup")] == ["A", "B", "C"]
    assert [r.name for r in sort_rows(rows, "name")] == ["A", "B", "C"]
    assert [r.name for r in sort_rows(rows, "bogus")] == ["B", "A", "C"]  # unknown key: default ranking
    assert {r.name: r.rank for r in rows} == {"B": 1, "A": 2, "C": 3}


def test_cache_follows_new_results_and_explicit_clear(add_sample, level1):
    add_sample("A", level1[0], speedup=2.0)
    first = leaderboard_rows(hardware="h200", problem_set="kernelbench-main", level=1)
    assert [r.name for r in first] == ["A"]
    add_sample("B", level1[0], speedup=3.0)  # e.g. written by a worker process: the fingerprint changes
    assert [r.name for r in leaderboard_rows(hardware="h200", problem_set="kernelbench-main", level=1)] == ["B", "A"]
    leaderboard_cache_clear()
    data = leaderboard_data(hardware="h200", problem_set="kernelbench-main")
    assert set(data.llms.values()) == {"A", "B"}


def test_board_follows_the_real_finish_service_and_flag_reviews(add_sample, level1, client):
    """Writes made the way workers make them (evaluation_finish, a review update) show on the next request,
    without anyone clearing the cache: the fingerprint moves."""
    from django.utils import timezone

    from evaluator.harness.record import Record
    from evaluator.services.evaluations import evaluation_finish

    running = add_sample("worker-llm", level1[0], status="running", correct=None, speedup=None, attempts=1)
    Submission = type(running.kernel.submission)
    Submission.objects.filter(pk=running.kernel.submission_id).update(kernel_count=1, evaluated_count=0)
    assert client.get("/api/leaderboard/", {"hardware": "h200"}).json()["rows"] == []  # cached: nothing finished
    record = Record(status="ok", correct=True, standard_correct=True, speedup=2.0, speedup_fp32=2.5, memory_ratio=1.5)
    assert evaluation_finish(evaluation=running, record=record)
    rows = client.get("/api/leaderboard/", {"hardware": "h200"}).json()["rows"]
    assert [(r["name"], r["correct"], r["speedup"]) for r in rows] == [("worker-llm", 1, 2.0)]
    flag = AuditFlagFactory(kernel=running.kernel, review_state=AuditFlag.Review.SUSPECTED)
    assert client.get("/api/leaderboard/", {"hardware": "h200"}).json()["rows"][0]["correct"] == 1
    AuditFlag.objects.filter(pk=flag.pk).update(review_state=AuditFlag.Review.CONFIRMED, reviewed_at=timezone.now())
    assert client.get("/api/leaderboard/", {"hardware": "h200"}).json()["rows"][0]["correct"] == 0


def test_default_ranking_prefers_coverage_over_a_lucky_geomean(add_sample, level1):
    """1 correct problem of 2 at 3x must not outrank 4 correct of 4 at 1.2x (the geomean over correct problems
    alone would): the default order is fast_1 over the whole set."""
    p1, p2, p3, p4, _ = level1
    add_sample("lucky", p1, speedup=3.0)
    add_sample("lucky", p2, speedup=None, correct=False)
    for p in (p1, p2, p3, p4):
        add_sample("steady", p, speedup=1.2)
    rows = leaderboard_rows(hardware="h200", problem_set="kernelbench-main", level=1)
    assert [r.name for r in rows] == ["steady", "lucky"]
    steady, lucky = rows
    assert (steady.rank, lucky.rank) == (1, 2)
    assert steady.fast_p["1"] == pytest.approx(80.0) and lucky.fast_p["1"] == pytest.approx(20.0)
    assert lucky.speedup > steady.speedup  # still shown, just not what ranks


def test_repeated_evaluations_of_one_source_combine_into_their_median(add_sample, level1):
    """One kernel uploaded four times measured 0.006x to 0.185x: it counts once, at the median, not the best."""
    p1, p2, *_ = level1
    for sample, speedup in enumerate((0.006, 0.05, 0.1, 0.185)):
        add_sample("A", p1, sample, speedup=speedup, source="same kernel\n")
    add_sample("A", p2, 0, speedup=2.0, source="same kernel\n")  # another problem: not combined with p1
    row = board(1)["A"]
    assert (row.attempted, row.correct, row.kernels) == (2, 2, 5)
    assert row.speedup == pytest.approx(math.sqrt(0.075 * 2.0))
    data = compute_leaderboard(hardware="h200", problem_set="kernelbench-main")
    cell = data.cells[p1.pk][next(iter(data.llms))]
    assert (cell.speedup, cell.runs) == (pytest.approx(0.075), 4)


def test_a_repeat_that_failed_once_is_not_correct(add_sample, level1):
    add_sample("A", level1[0], 0, speedup=2.0, source="flaky\n")
    add_sample("A", level1[0], 1, speedup=None, correct=False, source="flaky\n")
    row = board(1)["A"]
    assert (row.attempted, row.correct) == (1, 0)


def test_api_and_csv_share_the_page_ranking(add_sample, level1, client):
    p1, p2, *_ = level1
    add_sample("lucky", p1, speedup=3.0)
    add_sample("steady", p1, speedup=1.2)
    add_sample("steady", p2, speedup=1.2)
    rows = client.get("/api/leaderboard/", {"hardware": "h200", "level": 1}).json()["rows"]
    assert [(r["name"], r["rank"], r["problems"], r["fast_p"]["1"]) for r in rows] == [
        ("steady", 1, 5, 40.0),
        ("lucky", 2, 5, 20.0),
    ]
    csv = client.get("/api/leaderboard.csv", {"hardware": "h200", "level": 1}).content.decode().splitlines()
    assert [line.split(",")[4] for line in csv[1:]] == ["steady", "lucky"]
    assert "coverage_pct" in csv[0]
