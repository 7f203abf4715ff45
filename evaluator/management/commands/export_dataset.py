"""`manage.py export_dataset --out DIR`: write the public dataset (every finished verdict as JSON lines, its schema,
datasheet and manifest) to DIR/kbv-verdicts-<version>/ (evaluator.dataset)."""

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
        self.stdout.write(f"{manifest['rows']} verdicts -> {folder}")
