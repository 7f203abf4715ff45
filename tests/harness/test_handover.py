"""Inputs are regenerated from seeds on both sides; outputs come back by CUDA IPC or file, descriptors untrusted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from evaluator.harness.workers.handover import open_cuda, validate  # noqa: E402
from evaluator.harness.workers.inputs import load_problem, make_inputs  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROBLEM = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, y, k):
        return x * y + k
def get_inputs():
    return [torch.randn(64, 32), torch.rand(64, 32), 3]
def get_init_inputs():
    return []
"""


def test_same_seed_same_inputs_in_another_process():
    ns = load_problem(PROBLEM)
    here = make_inputs(ns, 1234, -1.0, "cpu")
    script = (
        "import sys, torch; from evaluator.harness.workers.inputs import load_problem, make_inputs;"
        "ns = load_problem(sys.stdin.read()); xs = make_inputs(ns, 1234, -1.0, 'cpu');"
        "torch.save(xs, sys.argv[1])"
    )
    out = Path(__file__).with_name("_inputs_tmp.pt")
    try:
        subprocess.run([sys.executable, "-c", script, str(out)], input=PROBLEM, text=True, cwd=REPO, check=True)
        there = torch.load(out, weights_only=True)
    finally:
        out.unlink(missing_ok=True)
    assert torch.equal(here[0], there[0]) and torch.equal(here[1], there[1]) and there[2] == 3
    assert bool((here[1] <= 0).all())  # the distribution factor scales float tensors (D4: x -1), not ints
    other = make_inputs(ns, 1235, -1.0, "cpu")
    assert not torch.equal(here[0], other[0])


def test_problem_without_get_inputs_is_rejected():
    with pytest.raises(ValueError, match="get_inputs"):
        load_problem("class Model: pass\ndef get_init_inputs(): return []\n")


GOOD = {
    "kind": "cuda_ipc",
    "device": 0,
    "handle": "00",
    "ref_counter": "00",
    "storage_bytes": 4 * 3000,
    "storage_offset_bytes": 0,
    "ref_counter_offset": 0,
    "offset": 10,
    "dtype": "torch.float32",
    "shape": [3, 10],
    "stride": [1000, 1],
}


def test_a_well_formed_descriptor_passes_validation():
    assert validate(GOOD)[1:3] == ([3, 10], [1000, 1])


@pytest.mark.parametrize(
    "change",
    [
        {"dtype": "torch.float32; import os"},
        {"shape": [4, -1], "stride": [1, 1]},
        {"shape": [4], "stride": [1, 1]},
        {"shape": [1] * 40, "stride": [1] * 40},
        {"storage_bytes": -5},
        {"handle": None},
        {"shape": [3, 100000]},  # a view past the end of the shared storage: foreign memory
        {"offset": 2991},
        {"stride": [2000, 1]},
    ],
)
def test_malformed_descriptors_are_refused_before_touching_the_device(change):
    with pytest.raises(ValueError):
        validate({**GOOD, **change})
    with pytest.raises(ValueError):
        open_cuda({**GOOD, **change}, "cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_ipc_round_trip_between_processes():
    """A child exports a CUDA tensor; this process opens, clones and checks it (what the reference worker does)."""
    script = (
        "import json, sys, torch; from evaluator.harness.workers.handover import export_cuda;"
        "t = torch.arange(3 * 1000, dtype=torch.float32, device='cuda').view(3, 1000)[:, 10:20];"
        "print(json.dumps(export_cuda(t)), flush=True); sys.stdin.readline()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        desc = json.loads(child.stdout.readline())
        got = open_cuda(desc, "cuda")
        want = torch.arange(3 * 1000, dtype=torch.float32, device="cuda").view(3, 1000)[:, 10:20]
        assert torch.equal(got, want)
    finally:
        child.communicate("\n", timeout=30)


def test_mixed_sign_inputs_are_positive_but_for_a_few_elements_and_reproducible():
    ns = load_problem(PROBLEM)
    first, again = make_inputs(ns, 99, "mixed", "cpu"), make_inputs(ns, 99, "mixed", "cpu")
    x = first[0]
    negatives = int((x < 0).sum())
    assert 1 <= negatives <= 64 and negatives < x.numel() // 8
    assert bool((x.reshape(-1)[:16] >= 0).all()) or negatives > 1  # a 16-element probe almost surely sees no sign
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    plain = make_inputs(ns, 99, 1.0, "cpu")
    assert torch.equal(x.abs(), plain[0].abs())  # same magnitudes as D1: only signs change


def test_output_files_are_read_without_following_links(tmp_path):
    """The kernel owns its io folder: a planted symlink (file or folder) or a FIFO must not redirect the reader."""
    from evaluator.harness.workers.handover import load_untrusted_file

    io = tmp_path / "cand" / "io"
    io.mkdir(parents=True)
    secret = tmp_path / "elsewhere.pt"
    torch.save(torch.ones(3), secret)
    torch.save(torch.arange(3), io / "ok.pt")
    assert torch.equal(load_untrusted_file(str(io / "ok.pt"), "cpu"), torch.arange(3))
    assert not (io / "ok.pt").exists()  # consumed
    (io / "link.pt").symlink_to(secret)
    with pytest.raises(OSError):
        load_untrusted_file(str(io / "link.pt"), "cpu")
    os.mkfifo(io / "fifo.pt")
    with pytest.raises(ValueError, match="regular"):
        load_untrusted_file(str(io / "fifo.pt"), "cpu")
    moved = tmp_path / "cand" / "io-real"
    io.rename(moved)
    io.symlink_to(tmp_path)  # the whole folder swapped for a link
    with pytest.raises(OSError):
        load_untrusted_file(str(io / "elsewhere.pt"), "cpu")
