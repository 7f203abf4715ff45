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
    folder = tmp_path / "a" / "kbv-verdicts-1.0"
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
    assert (tmp_path / "b" / "kbv-verdicts-1.0" / "verdicts.jsonl").read_bytes() == (
        folder / "verdicts.jsonl"
    ).read_bytes()


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
