"""The public dataset: every finished verdict as one JSON line (record without secrets, kernel source, problem, LLM,
environment), with its JSON schema (`schema.json`) and datasheet (`DATASHEET.md`) beside this file.

`dataset_rows()` reads them (served at /dataset/verdicts.jsonl), `dataset_export()` writes a named release (its
sequence and date, `releases.py`) with a changelog of what changed since the previous one (`manage.py
export_dataset`). `sample.jsonl` is a small export kept in the repository for tests and readers. Rows are ordered
by evaluation id and carry nothing that depends on when they were exported, so two exports of the same database
have byte-identical rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

from django.utils import timezone

from evaluator.dataset.releases import CHANGELOG_MD, changelog_add, changes_between, next_release, releases
from evaluator.harness import seeds
from evaluator.models import Evaluation, SeedCommitment
from evaluator.selectors.stacks import stack_label

DATASET_VERSION = "1.0"  # the rows' shape (schema.json's version); bump it with every change to the fields
HERE = Path(__file__).resolve().parent
SCHEMA_PATH = HERE / "schema.json"
DATASHEET_PATH = HERE / "DATASHEET.md"
SAMPLE_PATH = HERE / "sample.jsonl"
ROWS_NAME = "verdicts.jsonl"


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def dataset_row(evaluation: Evaluation, *, revealed_master: str | None = None) -> dict[str, Any]:
    """One verdict as a dataset row (`evaluation` with kernel, problem and LLM loaded)."""
    kernel, problem, llm = evaluation.kernel, evaluation.kernel.problem, evaluation.kernel.llm
    record = {k: v for k, v in (evaluation.result or {}).items() if k != seeds.RECORD_KEY}
    env = record.get("environment") or {}
    return {
        "dataset_version": DATASET_VERSION,
        "evaluation_id": evaluation.pk,
        "hardware": evaluation.hardware,
        "is_current": evaluation.is_current,
        "finished_at": _iso(evaluation.finished_at),
        "llm": {"name": llm.name, "organisation": llm.organisation},
        "problem": {
            "problem_set": problem.problem_set,
            "level": problem.level,
            "problem_id": problem.problem_id,
            "name": problem.name,
            "sha256": problem.sha256,
            "source": problem.source,
        },
        "kernel": {"id": kernel.pk, "sample": kernel.sample, "sha256": kernel.sha256, "source": kernel.source},
        "verdict": {
            "status": evaluation.result_status,
            "correct": evaluation.correct,
            "standard_correct": evaluation.standard_correct,
            "speedup": evaluation.speedup,
            "speedup_ci": [evaluation.speedup_ci_low, evaluation.speedup_ci_high],
            "speedup_fp32": evaluation.speedup_fp32,
            "memory_ratio": evaluation.memory_ratio,
            "distributions": [
                {k: d.get(k) for k in ("name", "passed", "skipped", "trials", "max_abs_error", "max_rel_error")}
                for d in record.get("distributions") or []
            ],
        },
        "stack": stack_label(env),
        "environment": env,
        "seeds": {
            "digest": env.get("seeds_digest"),
            "scheme": env.get("seeds_scheme"),
            "master": revealed_master,  # null until revealed (README: how a reader checks a verdict)
        },
        "record": record,
    }


def dataset_size() -> int:
    """How many rows `dataset_rows()` yields."""
    return Evaluation.objects.filter(status=Evaluation.Status.DONE).count()


def dataset_rows() -> Iterator[dict[str, Any]]:
    """Every finished verdict (status done), oldest evaluation first."""
    revealed = dict(SeedCommitment.objects.filter(revealed_at__isnull=False).values_list("evaluation_id", "master"))
    rows = (
        Evaluation.objects.filter(status=Evaluation.Status.DONE)
        .select_related("kernel__problem", "kernel__llm")
        .order_by("pk")
    )
    for evaluation in rows.iterator(chunk_size=200):
        yield dataset_row(evaluation, revealed_master=revealed.get(evaluation.pk))


def dumps_row(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False)


def write_rows(rows: Iterable[dict[str, Any]], path: Path) -> tuple[int, str]:
    """Write JSON lines; return the count and the file's sha256."""
    digest, count = hashlib.sha256(), 0
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            line = dumps_row(row) + "\n"
            out.write(line)
            digest.update(line.encode())
            count += 1
    return count, digest.hexdigest()


def dataset_export(*, out_dir: Path, today: date | None = None) -> Path:
    """Write the next release into `out_dir`: `kbv-verdicts-<version>-r<NNN>-<date>/` with verdicts.jsonl,
    schema.json, DATASHEET.md, manifest.json (the release's name, the previous one, the counts of what changed) and
    the changelog, which is also kept, newest first, in `out_dir` (CHANGELOG.md, changelog.json)."""
    now = timezone.now()
    release = next_release(Path(out_dir), version=DATASET_VERSION, day=today or now.date())
    done = releases(Path(out_dir))
    previous = done[-1] if done else None
    folder = release.folder
    folder.mkdir(parents=True, exist_ok=False)  # a release is never written over
    count, sha = write_rows(dataset_rows(), folder / ROWS_NAME)
    (folder / "schema.json").write_text(SCHEMA_PATH.read_text())
    (folder / "DATASHEET.md").write_text(DATASHEET_PATH.read_text())
    changes = changes_between(
        release=release.name, previous=previous, rows_path=folder / ROWS_NAME, rows_name=ROWS_NAME
    )
    exported_at = _iso(now) or ""
    manifest = {
        "dataset_version": DATASET_VERSION,
        "release": release.name,
        "release_sequence": release.sequence,
        "previous_release": changes.previous,
        "changes": changes.counts(),
        "rows": count,
        "files": {ROWS_NAME: sha},
        "exported_at": exported_at,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (folder / CHANGELOG_MD).write_text(changelog_add(Path(out_dir), changes, exported_at=exported_at))
    return folder
