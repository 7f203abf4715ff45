"""The public dataset: the export round-trips through its JSON schema, is byte-identical when repeated, the shipped
sample is valid, and the site serves the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from django.utils import timezone

from evaluator.dataset import SAMPLE_PATH, dataset_rows, schema
from evaluator.harness import seeds
from evaluator.harness.record import Distribution, Record
from evaluator.models import SeedCommitment
from tests.factories import EvaluationFactory

pytestmark = pytest.mark.django_db


def _validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema())
    return jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def verdicts():
    """Two verdicts with full records; the first one's seeds revealed."""
    made = []
    for correct in (True, False):
        master = seeds.draw()
        record = Record(
            status="ok",
            correct=correct,
            standard_correct=True,
            speedup=1.4,
            distributions=[
                Distribution(name=n, passed=correct or n != "D4", trials=2) for n in ("D1", "D2", "D3", "D4")
            ],
        ).to_dict()
        record["environment"].update(torch="2.13.0", seeds_digest=seeds.digest(master), seeds_scheme=seeds.SCHEME)
        ev = EvaluationFactory(correct=correct, result=record, finished_at=timezone.now())
        SeedCommitment.objects.create(
            evaluation=ev,
            master=master,
            digest=seeds.digest(master),
            scheme=seeds.SCHEME,
            revealed_at=timezone.now() if correct else None,
        )
        made.append((ev, master))
    return made


def test_the_export_round_trips_through_its_schema(verdicts, tmp_path):
    call_command("export_dataset", "--out", str(tmp_path / "a"))
    (folder,) = (tmp_path / "a").glob("kbv-verdicts-1.0-r001-*")
    rows = _lines(folder / "verdicts.jsonl")
    validator = _validator()
    for row in rows:
        validator.validate(row)
    # What was written is what the database holds, read back whole.
    assert rows == [json.loads(json.dumps(r)) for r in dataset_rows()]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["rows"] == 2 and json.loads((folder / "schema.json").read_text()) == schema()
    # No secrets: the unrevealed master appears nowhere; the revealed one is given, and matches its digest.
    (revealed, master_a), (_, master_b) = verdicts
    text = (folder / "verdicts.jsonl").read_text()
    assert master_b not in text and "seeds_master" not in text
    assert rows[0]["seeds"]["master"] == master_a and seeds.digest(master_a) == rows[0]["seeds"]["digest"]
    assert rows[1]["seeds"]["master"] is None and rows[0]["evaluation_id"] == revealed.pk
    # Reproducible: a second export of the same database is byte-identical.
    call_command("export_dataset", "--out", str(tmp_path / "b"))
    (again,) = (tmp_path / "b").glob("kbv-verdicts-1.0-r001-*")
    assert (again / "verdicts.jsonl").read_bytes() == (folder / "verdicts.jsonl").read_bytes()


def test_each_release_is_named_and_the_changelog_says_what_changed(verdicts, tmp_path):
    """Releases get a sequence and a date in their folder and manifest (every export once wrote the same
    kbv-verdicts-1.0/), and the changelog counts the verdicts added, removed and changed since the one before."""
    from datetime import date

    from evaluator.dataset import dataset_export
    from evaluator.models import Evaluation

    first = dataset_export(out_dir=tmp_path, today=date(2026, 12, 1))
    assert first.name == "kbv-verdicts-1.0-r001-2026-12-01"
    (correct, _), (incorrect, _) = verdicts
    # Between the releases: a new verdict, one removed, one whose verdict flipped, one whose seeds were revealed.
    added = EvaluationFactory(result=incorrect.result, correct=False, finished_at=timezone.now())
    flipped = EvaluationFactory(result=correct.result, correct=True, finished_at=timezone.now())
    second = dataset_export(out_dir=tmp_path, today=date(2026, 12, 2))
    Evaluation.objects.filter(pk=flipped.pk).update(correct=False)
    Evaluation.objects.filter(pk=correct.pk).delete()
    SeedCommitment.objects.filter(evaluation=incorrect).update(revealed_at=timezone.now())
    third = dataset_export(out_dir=tmp_path, today=date(2026, 12, 4))
    assert [f.name for f in (second, third)] == ["kbv-verdicts-1.0-r002-2026-12-02", "kbv-verdicts-1.0-r003-2026-12-04"]
    assert all((f / "verdicts.jsonl").is_file() for f in (first, second, third))  # earlier releases are kept

    manifest = json.loads((third / "manifest.json").read_text())
    assert manifest["release"] == "r003-2026-12-04" and manifest["previous_release"] == "r002-2026-12-02"
    assert manifest["changes"] == {"rows": 3, "added": 0, "removed": 1, "verdict_changed": 1, "other_changed": 1}
    log = json.loads((tmp_path / "changelog.json").read_text())
    assert [e["release"] for e in log] == ["r003-2026-12-04", "r002-2026-12-02", "r001-2026-12-01"]
    assert (log[0]["removed"], log[0]["verdict_changed"], log[0]["other_changed"]) == (
        [correct.pk],
        [flipped.pk],
        [incorrect.pk],
    )
    assert log[1]["added"] == sorted([added.pk, flipped.pk]) and log[2]["added"] == [correct.pk, incorrect.pk]
    text = (tmp_path / "CHANGELOG.md").read_text()
    assert text.index("## r003-2026-12-04") < text.index("## r002-2026-12-02") < text.index("## r001-2026-12-01")
    assert "3 verdicts: 0 added, 1 removed, 1 with a changed verdict, 1 changed otherwise." in text
    assert (third / "CHANGELOG.md").read_text() == text  # a downloaded release carries its history


def test_a_row_that_breaks_the_schema_is_caught(verdicts):
    row = json.loads(json.dumps(next(dataset_rows())))
    row["record"]["seeds_master"] = "ab" * 32
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(row)


def test_the_shipped_sample_is_valid():
    rows = _lines(SAMPLE_PATH)
    assert len(rows) >= 2 and {r["verdict"]["correct"] for r in rows} == {True, False}
    for row in rows:
        _validator().validate(row)
        if row["seeds"]["master"]:
            assert seeds.digest(row["seeds"]["master"]) == row["seeds"]["digest"] == row["environment"]["seeds_digest"]


def test_the_site_serves_the_dataset(verdicts, client):
    page = client.get("/dataset/")
    assert page.status_code == 200 and "verdicts.jsonl" in page.content.decode()
    answer = client.get("/dataset/verdicts.jsonl")
    served = [json.loads(line) for line in b"".join(answer.streaming_content).decode().splitlines()]
    assert answer.status_code == 200 and served == [json.loads(json.dumps(r)) for r in dataset_rows()]
    assert client.get("/dataset/schema.json").status_code == 200
    assert client.get("/dataset/DATASHEET.md").status_code == 200
