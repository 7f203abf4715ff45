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
