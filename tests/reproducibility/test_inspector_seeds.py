"""The inspector shows a verdict's seeds only once revealed, with the command that re-runs it, and the kernel's
verdicts across software stacks."""

from __future__ import annotations

import pytest
from django.utils import timezone

from evaluator.harness import seeds
from evaluator.harness.record import Record
from evaluator.models import SeedCommitment
from evaluator.services.seeds import seeds_reveal_due
from tests.factories import EvaluationFactory

pytestmark = pytest.mark.django_db


def test_seeds_are_shown_once_revealed_with_the_command(client):
    master = seeds.draw()
    record = Record(status="ok", correct=True, standard_correct=True, speedup=1.5).to_dict()
    record["environment"].update(torch="2.13.0", seeds_digest=seeds.digest(master), seeds_scheme=seeds.SCHEME)
    ev = EvaluationFactory(result=record, finished_at=timezone.now())
    SeedCommitment.objects.create(evaluation=ev, master=master, digest=seeds.digest(master), scheme=seeds.SCHEME)

    html = client.get(f"/kernels/{ev.kernel_id}/").content.decode()
    assert seeds.digest(master) in html and master not in html and "revealed when this evaluation" in html
    assert 'id="verdict-history"' in html and "torch 2.13.0" in html

    ev.is_current = False  # superseded: due at once
    ev.save(update_fields=["is_current"])
    assert seeds_reveal_due() == 1
    html = client.get(f"/kernels/{ev.kernel_id}/?evaluation={ev.pk}").content.decode()
    assert master in html and f"manage.py reproduce {ev.pk}" in html and f"--seeds {master}" in html


def test_the_admin_lists_commitments_without_their_master(admin_client):
    master = seeds.draw()
    ev = EvaluationFactory()
    row = SeedCommitment.objects.create(evaluation=ev, master=master, digest=seeds.digest(master), scheme=seeds.SCHEME)
    listing = admin_client.get("/admin/evaluator/seedcommitment/")
    detail = admin_client.get(f"/admin/evaluator/seedcommitment/{row.pk}/change/")
    assert listing.status_code == detail.status_code == 200
    assert master not in listing.content.decode() + detail.content.decode()
    admin_client.post(
        "/admin/evaluator/seedcommitment/", {"action": "reveal_now", "_selected_action": [row.pk]}, follow=True
    )
    row.refresh_from_db()
    assert row.revealed_at is not None
    for page in ("reevaluation", "webhook"):
        assert admin_client.get(f"/admin/evaluator/{page}/").status_code == 200


def test_the_api_gives_the_digest_and_the_master_once_revealed(client):
    master = seeds.draw()
    record = Record(status="ok", correct=True, standard_correct=True, speedup=1.5).to_dict()
    record["environment"].update(seeds_digest=seeds.digest(master), seeds_scheme=seeds.SCHEME)
    ev = EvaluationFactory(result=record, finished_at=timezone.now())
    row = SeedCommitment.objects.create(evaluation=ev, master=master, digest=seeds.digest(master), scheme=seeds.SCHEME)
    shown = client.get(f"/api/evaluations/{ev.pk}/").json()["seeds"]
    assert shown["digest"] == seeds.digest(master) and shown["master"] is None and master not in str(shown)
    row.revealed_at = timezone.now()
    row.save()
    shown = client.get(f"/api/evaluations/{ev.pk}/").json()["seeds"]
    assert shown["master"] == master and shown["command"].endswith(f"reproduce {ev.pk}")
