"""The red-team suite on CPU: every exploit kernel must be caught by the evaluator at run time, every
legitimate kernel must pass, and resource abuse must be stopped without harming the next evaluation.

Kernels, problems and their headers live beside this file; `redteam_suite.py` holds the verdict rule. GPU-only
exploits (tests/redteam/gpu/) run on the H200 through benchmarks/redteam_gpu.py and here only when CUDA exists.
"""

from __future__ import annotations

import re

import pytest
import redteam_suite as rs

CPU_CASES = rs.load_cases(("exploit", "legit", "abuse"))
GPU_CASES = rs.load_cases(("gpu",))
CATALOGUE = [f"A{i}" for i in range(1, 11)] + [f"B{i}" for i in range(1, 12)] + ["C1", "C2", "C3", "C7"]
# Classes that only exist on a GPU; they are covered by tests/redteam/gpu/ (run on the H200).
GPU_ONLY = {"A1", "A8"}


def _check(case: rs.Case, result: dict) -> None:
    verdict = rs.judge(case, result)
    rs.VERDICTS[verdict.case_id] = verdict
    if verdict.ok:
        return
    if case.known_gap:
        pytest.xfail(f"known gap: {case.known_gap}")
    what = "pass" if case.is_legit else f"be caught (expected {case.expect})"
    pytest.fail(f"{case.id} should {what}; the evaluator said {verdict.observed}: {verdict.detail}")


@pytest.mark.parametrize("case", [c for c in CPU_CASES if c.kind == "exploit"], ids=lambda c: c.path.stem)
def test_exploit_is_caught(case: rs.Case, redteam_results: dict) -> None:
    _check(case, redteam_results[case.id])


@pytest.mark.parametrize("case", [c for c in CPU_CASES if c.kind == "legit"], ids=lambda c: c.path.stem)
def test_legitimate_kernel_passes(case: rs.Case, redteam_results: dict) -> None:
    _check(case, redteam_results[case.id])


@pytest.mark.parametrize("case", [c for c in CPU_CASES if c.kind == "abuse"], ids=lambda c: c.path.stem)
def test_resource_abuse_is_stopped_and_the_next_evaluation_runs(case: rs.Case, redteam_results: dict) -> None:
    result = redteam_results[case.id]
    assert result["_redteam_seconds"] < case.timeout + 60, "the abusive evaluation overran its limit"
    _check(case, result)


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: c.path.stem)
def test_gpu_exploit(case: rs.Case, tmp_path) -> None:  # pytest fixture
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA (run benchmarks/redteam_gpu.py on the H200)")
    _check(case, rs.run_one(case, work_root=tmp_path))


def test_every_catalogue_class_has_an_exploit() -> None:
    covered = {c.cls for c in CPU_CASES + GPU_CASES}
    missing = [cls for cls in CATALOGUE if cls not in covered]
    assert not missing, f"no exploit kernel for {missing}"
    cpu_covered = {c.cls for c in CPU_CASES if c.kind == "exploit"}
    assert set(CATALOGUE) - GPU_ONLY <= cpu_covered, "every class that exists on CPU needs a CPU exploit"


def test_headers_are_complete_and_consistent() -> None:
    for case in CPU_CASES + GPU_CASES:
        assert case.why, f"{case.id} lacks redteam-why"
        assert case.cls == "legit" or case.cls == "abuse" or re.fullmatch(r"[ABC]\d+", case.cls), case.id
        if case.expect == "not_faster":
            assert case.max_speedup is not None
        assert "class ModelNew" in case.path.read_text(), case.id


def test_evasion_variants_avoid_the_obvious_tokens() -> None:
    """C3 kernels must really hide what they do from string rules (and still fail at run time, tested above)."""
    tokens = {"threading", "gc.get_objects", "perf_counter", "_memo", "data_ptr"}
    for case in CPU_CASES:
        if case.cls == "C3":
            code = "\n".join(line for line in case.path.read_text().splitlines() if not line.startswith("#"))
            assert not [t for t in tokens if t in code], case.id


def test_judge_rule() -> None:
    """The verdict rule itself, on hand-made records (no evaluation)."""
    exploit = rs.Case(
        path=rs.PROBLEMS_DIR / "x.py",
        kind="exploit",
        cls="A6",
        problem=rs.PROBLEMS_DIR / "matmul.py",
        expect="not_faster",
        max_speedup=1.5,
    )
    ok = {"status": "ok", "correct": True, "checks": [], "distributions": []}
    assert rs.judge(exploit, {**ok, "speedup": 1.2}).ok
    assert not rs.judge(exploit, {**ok, "speedup": 40.0}).ok
    assert rs.judge(exploit, {**ok, "correct": False, "speedup": 40.0}).observed == "incorrect"
    assert rs.judge(exploit, {"status": "rejected", "correct": False}).observed == "rejected"
    legit = rs.Case(
        path=rs.PROBLEMS_DIR / "y.py",
        kind="legit",
        cls="legit",
        problem=rs.PROBLEMS_DIR / "matmul.py",
        expect="correct",
        min_speedup=1.5,
    )
    assert rs.judge(legit, {**ok, "speedup": 2.0}).ok
    assert not rs.judge(legit, {**ok, "speedup": 1.1}).ok
    line = rs.summary_line([rs.judge(exploit, {**ok, "speedup": 1.0}), rs.judge(legit, {**ok, "speedup": 2.0})])
    assert line == "caught 1 of 1, legitimate 1 of 1"


@pytest.mark.slow  # starts the real harness
def test_degenerate_problem_is_reported_constant(tmp_path) -> None:  # pytest fixture
    """B3 on a truly degenerate problem (L2-80 pattern): zeros are *correct*; the evaluator must say the reference is
    constant, which is what takes the problem out of the rankings."""
    zeros = (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def __init__(self, in_features, out_features):\n        super().__init__()\n"
        "        self.linear = nn.Linear(in_features, out_features)\n\n"
        "    def forward(self, x):\n        return torch.zeros(x.shape[0], 1)\n"
    )
    case = rs.Case(
        path=tmp_path / "zeros.py",
        kind="exploit",
        cls="B3",
        problem=rs.PROBLEMS_DIR / "const_zero.py",
        expect="incorrect",
        timeout=120,
    )
    result = rs.evaluate(case, kernel_source=zeros, work_root=tmp_path)
    assert result["reference_constant"] is True, rs.describe(result)
