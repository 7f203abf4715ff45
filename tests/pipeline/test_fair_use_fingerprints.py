"""Fair use: a source's fingerprint folds trivial variants of one kernel together (duplicate uploads, the board's
median per code, the inspector's list of folded uploads)."""

from __future__ import annotations

import pytest

from catalogue.fingerprints import source_fingerprint
from catalogue.models import LLM, Kernel
from evaluator.models import Evaluation
from leaderboard.selectors.ranking_compute import compute_leaderboard
from tests.pipeline.fair_use import KERNEL, finish, upload
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

pytestmark = pytest.mark.django_db


# --- Fingerprints: trivial variants are one kernel ---------------------------------------------------------------

VARIANT = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A docstring the original does not have."""

    def __init__( self ):
        super( ).__init__( )

    def forward(self, x ,):
        # a comment
        return x.clamp_min( 0 )
'''


def test_fingerprints_ignore_comments_docstrings_and_formatting():
    from tests.factories import KERNEL_SOURCE

    assert source_fingerprint(VARIANT) == source_fingerprint(KERNEL_SOURCE)
    assert source_fingerprint(KERNEL_SOURCE.replace("clamp_min(0)", "clamp_min(1)")) != source_fingerprint(
        KERNEL_SOURCE
    )
    assert source_fingerprint("t = (a,)") != source_fingerprint("t = (a)")  # a tuple is not a parenthesis
    assert source_fingerprint("x = 'a'") == source_fingerprint('x = "a"')
    assert source_fingerprint("y = " + "-" * 100_000)  # what exhausts ast.parse: the tokenizer is linear
    assert source_fingerprint("def f(:\n  x") != source_fingerprint("def f(:\n  y")  # broken files still differ


def test_a_comment_variant_of_an_uploaded_bundle_is_the_same_upload(demo_problems, api, sent):
    first = upload(api, make_zip({kernel_name(1, 1, 0): KERNEL}))
    again = upload(api, make_zip({kernel_name(1, 1, 0): "# reformatted\n" + KERNEL + "\n\n# end\n"}))
    assert first.status_code == 202 and again.status_code == 200
    assert again.json()["duplicate"] is True and again.json()["id"] == first.json()["id"]


def test_best_of_n_by_comment_variants_ranks_the_median_not_the_best(demo_problems, api, sent):
    # Three copies of one kernel differing only in a comment, measured 2.90x, 0.62x and 3.66x.
    for n, speedup in enumerate((2.90, 0.62, 3.66)):
        response = upload(api, make_zip({kernel_name(1, 1, n): f"{KERNEL}\n# copy {n}\n"}))
        assert response.status_code == 202
        finish(Evaluation.objects.get(kernel__submission_id=response.json()["id"]), speedup=speedup)
    assert len(set(Kernel.objects.values_list("sha256", flat=True))) == 3
    assert len(set(Kernel.objects.values_list("fingerprint", flat=True))) == 1
    board = compute_leaderboard(hardware="cpu", problem_set=DEMO_SET)
    llm = LLM.objects.get(name="model-a")
    problem = Kernel.objects.first().problem_id
    cell = board.cells[problem][llm.pk]
    assert cell.speedup == pytest.approx(2.90) and cell.runs == 3  # one kernel, its median
    (row,) = [r for r in board.rows[None] if r.llm_id == llm.pk]
    assert row.speedup == pytest.approx(2.90) and row.correct == 1


def test_the_inspector_shows_which_uploads_were_folded_together(demo_problems, api, client, sent):
    ids = [upload(api, make_zip({kernel_name(1, 1, n): f"{KERNEL}\n# copy {n}\n"})).json()["id"] for n in range(3)]
    other = upload(api, make_zip({kernel_name(1, 1, 3): demo_kernel(1, 1, 1)})).json()["id"]
    kernels = [Kernel.objects.get(submission_id=pk) for pk in ids]
    finish(Evaluation.objects.get(kernel=kernels[1]), speedup=0.62)
    page = client.get(f"/kernels/{kernels[0].pk}/").content.decode()
    assert "Folded with 2 other uploads of the same code" in page
    assert f"kernel #{kernels[1].pk}</a> (submission #{ids[1]}, sample 1, 0.62" in page
    assert f"/kernels/{kernels[2].pk}/" in page
    different = Kernel.objects.get(submission_id=other)
    assert "Folded with" not in client.get(f"/kernels/{different.pk}/").content.decode()


# --- Renamed copies: what does not change behaviour does not change the fingerprint ------------------------------

ORIGINAL = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.clamp_min(x, 0.0)
        return y
"""
# The four copies, each ranked as a sample of its own on 22ad196.
RENAMED_COPIES = {
    "renamed-local": ORIGINAL.replace("y = torch", "relu_out = torch").replace("return y", "return relu_out"),
    "renamed-argument": ORIGINAL.replace("self, x:", "self, inputs:").replace("(x, 0.0)", "(inputs, 0.0)"),
    "no-op-statement": ORIGINAL.replace("        return y", "        pass\n        y = y\n        0\n        return y"),
    "number-spelling": ORIGINAL.replace("0.0", "0.00"),
}


@pytest.mark.parametrize("copy", RENAMED_COPIES.values(), ids=RENAMED_COPIES.keys())
def test_a_renamed_copy_has_the_original_fingerprint(copy):
    assert copy != ORIGINAL and source_fingerprint(copy) == source_fingerprint(ORIGINAL)


def test_the_four_renamed_copies_rank_as_one_sample(demo_problems, api, sent):
    copies = [ORIGINAL, *RENAMED_COPIES.values()]
    for n, (source, speedup) in enumerate(zip(copies, (1.10, 0.62, 3.66, 1.40, 2.90), strict=True)):
        response = upload(api, make_zip({kernel_name(1, 1, n): source}))
        assert response.status_code == 202, response.content
        finish(Evaluation.objects.get(kernel__submission_id=response.json()["id"]), speedup=speedup)
    assert len(set(Kernel.objects.values_list("fingerprint", flat=True))) == 1
    board = compute_leaderboard(hardware="cpu", problem_set=DEMO_SET)
    llm = LLM.objects.get(name="model-a")
    cell = board.cells[Kernel.objects.first().problem_id][llm.pk]
    assert cell.runs == 5 and cell.speedup == pytest.approx(1.40)  # one kernel, the median of its five runs


# Each pair differs in what the code does (or may do): the fingerprint keeps them apart.
KEPT_APART = {
    "another-attribute": (ORIGINAL, ORIGINAL.replace("clamp_min", "clamp_max")),
    "int-not-float": (ORIGINAL, ORIGINAL.replace("0.0", "0")),
    "a-global-name": ("def f(x):\n    return x + z\n", "def f(z):\n    return z + z\n"),
    "a-module-level-name": ("k = 1\n", "j = 1\n"),
    "the-class-name": (ORIGINAL, ORIGINAL.replace("ModelNew", "Model")),
    "an-imported-name": ("def f():\n    import numpy as np\n    return np\n", "def f():\n    import numpy as xp\n"),
    "keyword-passed-parameters": (
        "def h(a, b):\n    return a - b\nh(b=1, a=2)\n",
        "def h(b, a):\n    return b - a\nh(b=1, a=2)\n",
    ),
    "a-default-read-outside": ("def f(x=y):\n    y = 1\n    return x\n", "def f(x=z):\n    z = 1\n    return x\n"),
    "names-it-can-see": ("def f(x):\n    return locals()\n", "def f(y):\n    return locals()\n"),
    "global-declared": ("def f(x):\n    global g\n    g = x\n", "def f(x):\n    global h\n    h = x\n"),
    "closure-or-local": ("def f(x):\n    return [x for x in x]\n", "def f(y):\n    return [y for z in y]\n"),
}


@pytest.mark.parametrize(("one", "other"), KEPT_APART.values(), ids=KEPT_APART.keys())
def test_code_that_behaves_differently_keeps_its_own_fingerprint(one, other):
    assert source_fingerprint(one) != source_fingerprint(other)


FOLDED = {
    "closure": (
        "def f(x):\n    def g():\n        return x\n    return g\n",
        "def f(y):\n    def g():\n        return y\n    return g\n",
    ),
    "comprehension": ("def f(x):\n    return [v for v in x]\n", "def f(y):\n    return [w for w in y]\n"),
    "lambda": ("f = lambda a: a + 1\n", "f = lambda b: b + 1\n"),
    "except-name": (
        "def f():\n    try:\n        g()\n    except E as e:\n        raise e\n",
        "def f():\n    try:\n        g()\n    except E as err:\n        raise err\n",
    ),
    "self": ("class A:\n    def m(self):\n        return self.k\n", "class A:\n    def m(s):\n        return s.k\n"),
    "positional-helper": ("def h(a):\n    return a\nh(1)\n", "def h(b):\n    return b\nh(1)\n"),
    "cuda-comments-and-spacing": (
        "s = '''\n#include <x>\n__global__ void k(float* y){ // one\n  y[0]=1.0f; /* two */ }\n'''\n",
        "s = '''\n#include  <x>\n__global__ void k(float *y)\n{\n    y[0] = 1.0f;\n}\n'''\n",
    ),
}


@pytest.mark.parametrize(("one", "other"), FOLDED.values(), ids=FOLDED.keys())
def test_local_renames_anywhere_fold_together(one, other):
    assert source_fingerprint(one) == source_fingerprint(other)


def test_a_file_that_does_not_parse_still_gets_a_token_fingerprint():
    assert source_fingerprint("def f(:)\n  x  # one") == source_fingerprint("def f(:)\n  x")  # tokens, no comments
    assert source_fingerprint("x = " + "(" * 5000 + "1" + ")" * 5000)  # too deep for the parser: never raises
    assert source_fingerprint("x = " + "+".join(["1"] * 100_000))  # deep enough to stop ast construction
