"""The CLI's summary gives each kernel the site's verdict: a kernel that failed the gate is never `ok 0.34x`."""

from __future__ import annotations

from client.__main__ import failed_parts, summary, verdict


def kernel(**kw):
    base = {"evaluation_id": 1, "level": 1, "problem_id": 19, "sample": 0, "status": "done", "result_status": "ok",
            "correct": True, "speedup": 1.5, "error": ""}  # fmt: skip
    return {**base, **kw}


def test_verdicts():
    assert verdict(kernel()) == "correct 1.50x"
    assert verdict(kernel(correct=False, speedup=0.34), ["D4"]) == "incorrect: D4 failed"
    assert verdict(kernel(correct=False, speedup=0.34)) == "incorrect"
    assert verdict(kernel(correct=False, result_status="compile_error", speedup=None)) == "compile error"
    assert verdict(kernel(correct=False, result_status="timeout", error="ran 900 s")) == "timeout: ran 900 s"
    assert verdict(kernel(status="queued", correct=None, result_status="")) == "queued"
    assert verdict(kernel(status="failed", correct=None, result_status="")).startswith("failed (infrastructure")


def test_failed_parts_reads_distributions_then_checks():
    detail = {"distributions": [{"name": "D1", "passed": True}, {"name": "D4", "passed": False}]}
    assert failed_parts(detail) == ["D4"]
    checks = {"distributions": [], "result": {"checks": [{"name": "mixed_sign_inputs", "passed": False}]}}
    assert failed_parts(checks) == ["mixed_sign_inputs"]


def test_summary_never_says_ok_for_an_incorrect_kernel():
    sub = {"id": 3, "status": "done", "correct_count": 0, "kernel_count": 1, "page_url": "http://x/submissions/3/",
           "progress": {"kernels": [kernel(correct=False, speedup=0.34)]}}  # fmt: skip
    text = summary(sub, {1: ["D2", "D4"]})
    assert "L1/19 sample 0: incorrect: D2, D4 failed" in text and "ok" not in text.replace("http", "")
