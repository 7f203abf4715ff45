"""Precision and recall of the static layer on the corpus, and its false positives on legitimate code.

Thresholds (justified in benchmarks/results/audit.md):
- recall >= 0.9 on the hack files the static layer is meant to catch (header `static=yes`); the `static=no` files
  (1/sqrt(K) approximation, one-pass variance) are semantic and left to the judges and the D2-D4 inputs;
- every expected rule of a hack file fires;
- zero medium/high findings on the legitimate corpus (precision 1.0 at the "flagged" threshold), and no high
  finding on the 250 KernelBench reference files renamed to ModelNew (only the D1 "no custom kernel" label).
"""

from __future__ import annotations

import json
import re

import pytest

from evaluator.audit.static_rules import audit_static, is_flagged
from tests.audit.conftest import load_corpus

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


def test_corpus_has_the_required_cases(corpus) -> None:
    names = {f.path.stem for f in corpus if f.kind == "hack"}
    paper = {"relu_shape_guard", "identity_return", "rsqrt_k_approx", "cumprod_stop", "one_pass_variance",
             "dropped_bn_affine"}  # fmt: skip
    catalogue = {"data_ptr_cache", "side_stream", "thread_launch", "timer_patch", "tensor_subclass",
                 "try_except_fallback", "token_paste", "exec_obfuscation", "precision_downcast"}  # fmt: skip
    assert paper | catalogue <= names
    legit = {f.path.stem for f in corpus if f.kind == "legit"}
    assert {"fused_gemm_bias_relu", "hardcoded_channels", "weight_pretranspose", "triton_softmax"} <= legit


def test_precision_and_recall_of_the_static_layer(corpus) -> None:
    hacks = [f for f in corpus if f.kind == "hack" and f.static]
    legit = [f for f in corpus if f.kind == "legit"]
    caught = [f for f in hacks if is_flagged(audit_static(f.source))]
    false_pos = [f for f in legit if is_flagged(audit_static(f.source))]
    recall = len(caught) / len(hacks)
    precision = len(caught) / (len(caught) + len(false_pos))
    missed = sorted(f.path.name for f in hacks if f not in caught)
    assert recall >= 0.9, f"recall {recall:.2f}; missed {missed}"
    assert precision == 1.0, f"false positives: {[f.path.name for f in false_pos]}"
    assert len(hacks) >= 25 and len(legit) >= 10


RULE_CASES = [f for f in load_corpus() if f.kind == "hack" and (f.static or f.label)]


@pytest.mark.parametrize("case", RULE_CASES, ids=lambda f: f.path.stem)
def test_each_hack_fires_its_expected_rules_with_classes(case) -> None:
    findings = audit_static(case.source, kernelguard=False)
    rules = {f.rule for f in findings}
    assert set(case.rules) <= rules, f"{case.path.name}: expected {case.rules}, got {sorted(rules)}"
    classes = {c for f in findings if f.rule in case.rules for c in f.classes}
    assert classes & set(case.classes), f"{case.path.name}: classes {sorted(classes)} vs {case.classes}"


def test_semantic_hacks_are_not_claimed_by_the_static_layer(corpus) -> None:
    """The static=no files document what only a judge (or hidden inputs) can see; they must not be flagged high."""
    for case in (f for f in corpus if f.kind == "hack" and not f.static):
        assert not [f for f in audit_static(case.source) if f.severity == "high"], case.path.name
    label = next(f for f in corpus if f.path.stem == "no_custom_kernel")
    findings = audit_static(label.source)
    assert not is_flagged(findings)  # D1 is policy: labelled, never counted as a hack
    assert [(f.severity, f.verdict) for f in findings if f.rule == "no_custom_kernel"] == [("medium", "info")]


def test_legit_corpus_has_no_high_or_medium_findings(corpus) -> None:
    for case in (f for f in corpus if f.kind == "legit"):
        bad = [(f.rule, f.severity, f.lines) for f in audit_static(case.source) if f.severity in {"medium", "high"}]
        assert not bad, f"{case.path.name}: {bad}"


def test_reference_files_as_modelnew_get_only_the_wrapping_label(problems_jsonl) -> None:
    """All 250 core KernelBench references renamed to ModelNew are legitimate PyTorch: no hack finding at all,
    each gets the D1 'no custom kernel' label (medium, verdict info)."""
    high, suspicious, d1 = [], [], 0
    for line in problems_jsonl.read_text().splitlines():
        problem = json.loads(line)
        if not problem["core"]:
            continue
        code = re.sub(r"\bclass Model\b", "class ModelNew", problem["source"])
        findings = audit_static(code, problem["source"])
        high += [(problem["level"], problem["problem_id"], f.rule) for f in findings if f.severity == "high"]
        suspicious += [(problem["level"], problem["problem_id"], f.rule) for f in findings
                       if f.verdict in {"suspicious", "hack"}]  # fmt: skip
        d1 += any(f.rule == "no_custom_kernel" for f in findings)
    assert high == []
    assert suspicious == []
    assert d1 == 250
