"""The master seed: derivation, commitment, and the comparison a reproduction prints (no harness process)."""

from __future__ import annotations

import hashlib

import pytest

from evaluator.harness import seeds
from evaluator.harness.orchestrator import reproduce
from evaluator.harness.protocol import Options


def test_labelled_seeds_depend_only_on_master_and_label():
    master = seeds.draw()
    assert seeds.derive(master, "D2_1") == seeds.derive(master, "D2_1")
    assert seeds.derive(master, "D2_1") != seeds.derive(master, "D2_0")
    assert seeds.derive(master, "D2_1") != seeds.derive(seeds.draw(), "D2_1")
    assert 0 <= seeds.derive(master, "params") < 2**62


def test_digest_is_sha256_of_the_hex_text():
    master = "ab" * 32
    assert seeds.digest(master) == hashlib.sha256(master.encode()).hexdigest()


def test_check_refuses_what_is_not_a_master_seed():
    assert seeds.check(" " + "AB" * 32 + "\n") == "ab" * 32
    for bad in ("", "ab" * 31, "zz" * 32):
        with pytest.raises(ValueError, match="64 hexadecimal"):
            seeds.check(bad)


def test_options_take_a_master_seed():
    assert Options.build({"seeds": "cd" * 32}).seeds == "cd" * 32
    assert Options.build().seeds == ""


def _record(d4_passed: bool, d4_abs: float) -> dict:
    dists = [
        {"name": n, "passed": True, "skipped": False, "trials": 2, "max_abs_error": 0.0, "max_rel_error": 0.0}
        for n in ("D1", "D2", "D3")
    ]
    dists.append(
        {"name": "D4", "passed": d4_passed, "skipped": False, "trials": 2, "max_abs_error": d4_abs, "max_rel_error": 0}
    )
    return {"status": "ok", "correct": d4_passed, "distributions": dists, "environment": {"torch": "2.13.0"}}


def test_identical_reproduction_reports_no_difference():
    text = reproduce.report(_record(False, 1.0), _record(False, 1.0))
    assert reproduce.differences(_record(False, 1.0), _record(False, 1.0)) == []
    assert "identical" in text


def test_differing_figures_are_listed_with_their_delta():
    again = _record(True, 0.5)
    again["environment"]["torch"] = "2.14.0"
    diffs = {d.figure: d for d in reproduce.differences(_record(False, 1.0), again)}
    assert set(diffs) == {"correct", "D4.passed", "D4.max_abs_error"}
    assert diffs["D4.max_abs_error"].delta == pytest.approx(-0.5)
    assert diffs["D4.max_abs_error"].relative == pytest.approx(-0.5)
    text = reproduce.report(_record(False, 1.0), again)
    assert "D4.max_abs_error: 1.0 -> 0.5 (delta -0.5, -50.00%)" in text
    assert "torch: '2.13.0' -> '2.14.0'" in text
