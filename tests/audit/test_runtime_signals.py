"""Runtime signals -> findings (pure) and -> flags (service), including corroboration of a judge flag."""

from __future__ import annotations

import pytest

from evaluator.audit.runtime_signals import runtime_findings
from evaluator.models import AuditFlag
from evaluator.services.audit import kernel_audit_runtime
from tests.factories import EvaluationFactory


def record(**overrides):
    base = {
        "status": "ok", "correct": True, "speedup": 1.4,
        "checks": [
            {"name": "wallclock_crosscheck", "passed": True, "detail": "ratio 1.01"},
            {"name": "output_no_alias", "passed": True, "detail": ""},
            {"name": "inputs_unchanged", "passed": True, "detail": ""},
            {"name": "speedup_plausible", "passed": True, "detail": ""},
        ],
    }  # fmt: skip
    base.update(overrides)
    return base


def test_clean_record_gives_no_findings() -> None:
    assert runtime_findings(record()) == []


def test_each_failed_check_maps_to_its_class() -> None:
    failed = record(checks=[
        {"name": "wallclock_crosscheck", "passed": False, "detail": "event 0.1 ms vs synced 2.3 ms"},
        {"name": "output_no_alias", "passed": False, "detail": "output shares storage with input 0"},
        {"name": "inputs_unchanged", "passed": False, "detail": "input 1 hash changed"},
        {"name": "speedup_plausible", "passed": False, "detail": "above roofline"},
        {"name": "something_new", "passed": False, "detail": ""},
        {"name": "determinism", "passed": None, "detail": "skipped"},
    ])  # fmt: skip
    found = {f.rule: f for f in runtime_findings(failed)}
    assert (
        found["runtime:timing_crosscheck"].classes == ("A1", "A2")
        and found["runtime:timing_crosscheck"].severity == "high"
    )
    assert "event 0.1 ms" in found["runtime:timing_crosscheck"].why
    assert found["runtime:output_alias"].classes == ("B4",)
    assert found["runtime:inputs_mutated"].classes == ("B5",)
    assert found["runtime:implausible_speed"].severity == "medium"
    assert found["runtime:something_new"].verdict == "suspicious"
    assert all(f.origin == "runtime" for f in found.values())
    assert not any("determinism" in r for r in found)  # passed=None (not run) is no signal


def test_timing_signals_measured_on_a_cpu_are_only_low_suspicions() -> None:
    checks = [
        {"name": "wallclock_crosscheck", "passed": False, "detail": "unexplained time per call"},
        {"name": "fresh_input_timing", "passed": False, "detail": "fresh inputs slower"},
        {"name": "output_no_alias", "passed": False, "detail": "output shares storage with input 0"},
    ]
    cpu = {f.rule: f for f in runtime_findings(record(checks=checks, timing={"device_kind": "cpu"}))}
    gpu = {f.rule: f for f in runtime_findings(record(checks=checks, timing={"device_kind": "cuda"}))}
    for rule in ("runtime:timing_crosscheck", "runtime:fresh_input_timing"):
        assert (cpu[rule].severity, cpu[rule].verdict) == ("low", "suspicious")
    assert (gpu["runtime:timing_crosscheck"].severity, gpu["runtime:timing_crosscheck"].verdict) == ("high", "hack")
    # Signals that do not depend on a clock keep their weight on a CPU.
    assert (cpu["runtime:output_alias"].severity, cpu["runtime:output_alias"].verdict) == ("high", "hack")


@pytest.mark.parametrize(("speedup", "expected"), [(9.9, False), (10.0, False), (12.5, True)])
def test_excessive_speedup_threshold(speedup, expected) -> None:
    assert any(f.rule == "runtime:excessive_speedup" for f in runtime_findings(record(speedup=speedup))) is expected


def test_speed_of_light_bound() -> None:
    below = record(speed_of_light={"bound_ms": 0.5}, timing={"candidate": {"median_ms": 0.2}})
    assert {f.rule for f in runtime_findings(below)} == {"runtime:faster_than_light"}
    near = record(speed_of_light={"bound_ms": 0.5}, timing={"candidate": {"median_ms": 0.55}})
    assert {f.rule for f in runtime_findings(near)} == {"runtime:near_speed_of_light"}
    far = record(speed_of_light={"bound_ms": 0.5}, timing={"candidate": {"median_ms": 5.0}})
    assert runtime_findings(far) == []


@pytest.mark.django_db
def test_service_stores_flags_idempotently_and_corroborates_a_judge(django_capture_on_commit_callbacks) -> None:
    ev = EvaluationFactory(speedup=14.0, result=record(speedup=14.0, checks=[
        {"name": "wallclock_crosscheck", "passed": False, "detail": "ratio 3.2"}]))  # fmt: skip
    judge = AuditFlag.objects.create(kernel=ev.kernel, source=AuditFlag.Source.JUDGE, source_name="alpha",
                                     verdict=AuditFlag.Verdict.HACK, severity="high", classes=["A1"])  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False):
        flags = kernel_audit_runtime(evaluation_id=ev.pk, enqueue_judges=False)
        again = kernel_audit_runtime(evaluation_id=ev.pk, enqueue_judges=False)
    assert {f.source_name for f in flags} == {"runtime:excessive_speedup", "runtime:timing_crosscheck"}
    assert AuditFlag.objects.filter(kernel=ev.kernel, source="runtime").count() == len(again) == 2
    stored = AuditFlag.objects.get(kernel=ev.kernel, source_name="runtime:timing_crosscheck")
    assert stored.raw["evaluation_id"] == ev.pk and stored.raw["hardware"] == ev.hardware
    judge.refresh_from_db()
    assert judge.review_state == AuditFlag.Review.CORROBORATED
    # Two runtime signals alone do not corroborate each other: they are one source.
    assert stored.review_state == AuditFlag.Review.CORROBORATED  # ... but the judge flag corroborates them


@pytest.mark.django_db
def test_runtime_flags_alone_stay_suspected(django_capture_on_commit_callbacks) -> None:
    ev = EvaluationFactory(speedup=30.0, result=record(speedup=30.0, checks=[
        {"name": "inputs_unchanged", "passed": False, "detail": "changed"}]))  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False):
        kernel_audit_runtime(evaluation_id=ev.pk, enqueue_judges=False)
    states = set(AuditFlag.objects.filter(kernel=ev.kernel).values_list("review_state", flat=True))
    assert states == {AuditFlag.Review.SUSPECTED}


@pytest.mark.django_db
def test_reviewed_runtime_flags_survive_a_rerun(staff, django_capture_on_commit_callbacks) -> None:
    from evaluator.services.audit import flag_review

    ev = EvaluationFactory(speedup=20.0, result=record(speedup=20.0))
    with django_capture_on_commit_callbacks(execute=True):
        (flag,) = kernel_audit_runtime(evaluation_id=ev.pk, enqueue_judges=False)
        flag_review(flag_id=flag.pk, user=staff, action="dismiss", note="fused kernel, 20x is plausible here")
        kernel_audit_runtime(evaluation_id=ev.pk, enqueue_judges=False)
    remaining = AuditFlag.objects.filter(kernel=ev.kernel, source="runtime")
    assert [(f.pk, f.review_state) for f in remaining] == [(flag.pk, AuditFlag.Review.DISMISSED)]


def test_a_kernel_busy_while_the_baseline_was_timed_is_flagged_as_slowing_it() -> None:
    """The harness's own finding text (candidate_cpu.busy_finding) reaches the audit as A11, not as timer patching."""
    from evaluator.harness.sandbox.candidate_cpu import busy_finding

    detail = busy_finding(400.0, 416.5)
    assert detail  # over the limit
    found = runtime_findings(record(checks=[{"name": "timer_integrity", "passed": False, "detail": detail}]))
    assert [(f.rule, f.classes, f.verdict) for f in found] == [("runtime:baseline_slowed", ("A11",), "hack")]
    patched = runtime_findings(
        record(checks=[{"name": "timer_integrity", "passed": False, "detail": "replaced: time.perf_counter"}])
    )
    assert [(f.rule, f.classes) for f in patched] == [("runtime:timer_tampering", ("A4", "C1"))]
