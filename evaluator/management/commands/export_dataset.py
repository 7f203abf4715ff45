"""`manage.py export_dataset --out DIR`: write the next release of the public dataset (every finished verdict as JSON
lines, its schema, datasheet, manifest and changelog) to DIR/kbv-verdicts-<version>-r<NNN>-<date>/, and add what
changed since the previous release to DIR/CHANGELOG.md (evaluator.dataset)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from evaluator.dataset import dataset_export


class Command(BaseCommand):
    help = "Export every public verdict as a versioned JSONL dataset with its JSON schema and datasheet."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--out", type=Path, default=Path("var/dataset"), help="folder to write into")

    def handle(self, *args, **opts) -> None:
        folder = dataset_export(out_dir=opts["out"])
        manifest = json.loads((folder / "manifest.json").read_text())
        changes = manifest["changes"]
        since = f"since {manifest['previous_release']}" if manifest["previous_release"] else "first release"
        self.stdout.write(
            f"release {manifest['release']}: {manifest['rows']} verdicts -> {folder} ({since}: {changes['added']} "
            f"added, {changes['removed']} removed, {changes['verdict_changed']} verdicts changed, "
            f"{changes['other_changed']} changed otherwise; CHANGELOG.md)"
        )
