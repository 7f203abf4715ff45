"""python manage.py load_gpu_results FIXTURE [FIXTURE ...]

Loads the rows a run of `scripts/gpu_e2e.py` exported (its LLM, the problems used, the submission, kernels,
evaluations, distribution results and audit flags; `serializers.serialize("json")`, the dumpdata format) into this
database beside whatever is there (the CPU demo): every row gets a new primary key and the foreign keys follow, so
nothing of the demo is overwritten. Problems are matched by (problem set, level, id, sha256): the KernelBench set
the repository carries is imported first when the fixture's problems come from it, so the board counts the whole
set; a problem not found is created from the fixture. Idempotent: a submission already loaded (same LLM, hardware,
problem set and bundle sha256) is skipped. The hardware label (e.g. h200) need not be in EVALUATOR_HARDWARE_LABELS:
that list gates uploads only; the board lists every label that has evaluations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.apps import apps
from django.core import serializers
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evaluator.harness.record import Record
from evaluator.record_projection import evaluation_columns
from leaderboard.selectors.ranking_cache import leaderboard_cache_clear
from leaderboard.services.problems import problems_import_path

_MODELS: dict[str, Any] = {m.__name__: m for m in apps.get_models()}  # by name, whichever app holds them
LLM, Problem, Submission, Kernel = (_MODELS[n] for n in ("LLM", "Problem", "Submission", "Kernel"))
Evaluation, DistributionResult, AuditFlag = (_MODELS[n] for n in ("Evaluation", "DistributionResult", "AuditFlag"))

KERNELBENCH_JSONL = Path(__file__).resolve().parents[2] / "data" / "kernelbench" / "problems.jsonl"
DEMO_PROBLEMS = Path(__file__).resolve().parents[2] / "demo" / "problems"
ORDER = [LLM, Problem, Submission, Kernel, Evaluation, DistributionResult, AuditFlag]
# Runs exported before catalogue/migrations/0006_label_catalogue.py name the catalogue's models under this label.
FORMER_LABEL = "leaderboard."


def _rows(text: str) -> list[Any]:
    """A fixture's rows, with models exported under the catalogue's former label named under its own."""
    rows = json.loads(text)
    if not isinstance(rows, list):
        raise ValueError("a fixture is a JSON list of rows")
    for row in rows:
        if isinstance(row, dict) and str(row.get("model", "")).startswith(FORMER_LABEL):
            row["model"] = "catalogue." + row["model"][len(FORMER_LABEL) :]
    return rows


def _carried_sets() -> dict[str, tuple[Path, bool]]:
    """Problem sets whose sources this repository carries: label -> (path, is_demo)."""
    return {"kernelbench-main": (KERNELBENCH_JSONL, False), "demo": (DEMO_PROBLEMS, True)}


def _insert(obj: Any, **fields: Any) -> Any:
    """Save a copy of a deserialized row under a new primary key, keeping its own timestamps (auto_now_add)."""
    stamps = {
        f.attname: getattr(obj, f.attname)
        for f in obj._meta.concrete_fields
        if getattr(f, "auto_now_add", False) and getattr(obj, f.attname) is not None
    }
    obj.pk = None
    obj._state.adding = True
    for name, value in fields.items():
        setattr(obj, name, value)
    obj.save(force_insert=True)
    if stamps:
        type(obj).objects.filter(pk=obj.pk).update(**stamps)
    return obj


class Command(BaseCommand):
    help = "Load an exported GPU run (scripts/gpu_e2e.py) beside the existing data, under new primary keys."

    def add_arguments(self, parser) -> None:
        parser.add_argument("fixtures", nargs="+", type=Path)

    def handle(self, *args, fixtures: list[Path], **options) -> None:
        for path in fixtures:
            if not path.exists():
                raise CommandError(f"No fixture {path}.")
            try:
                found = serializers.deserialize("python", _rows(path.read_text()), ignorenonexistent=True)
                rows = [d.object for d in found]
            except (ValueError, LookupError, TypeError, serializers.base.DeserializationError) as exc:
                raise CommandError(f"{path}: not a fixture of this schema ({exc})") from exc
            self.stdout.write(f"{path}: {self.load(rows)}")
        leaderboard_cache_clear()

    @transaction.atomic
    def load(self, rows: list[Any]) -> str:
        by_model: dict[type, list[Any]] = {model: [] for model in ORDER}
        for row in rows:
            if type(row) not in by_model:
                raise CommandError(f"unexpected row {type(row).__name__} in the fixture")
            by_model[type(row)].append(row)
        subs = by_model[Submission]
        if len(subs) != 1 or len(by_model[LLM]) != 1:
            raise CommandError("a GPU results fixture holds exactly one LLM and one submission")
        src_llm, src_sub = by_model[LLM][0], subs[0]
        llm = LLM.objects.filter(name=src_llm.name).first()
        if (
            llm
            and Submission.objects.filter(
                llm=llm, hardware=src_sub.hardware, problem_set=src_sub.problem_set, bundle_sha256=src_sub.bundle_sha256
            ).exists()
        ):
            return f"already loaded ({src_llm.name}, {src_sub.hardware})"
        if llm is None:
            llm = _insert(src_llm, owner_id=None, owner_group_id=None)
        problems = self.problems(by_model[Problem])
        sub = _insert(src_sub, llm_id=llm.pk, uploader_id=None)
        kernels = {}
        for k in by_model[Kernel]:
            old = k.pk
            kernels[old] = _insert(k, submission_id=sub.pk, llm_id=llm.pk, problem_id=problems[k.problem_id]).pk
        evaluations = {}
        for ev in by_model[Evaluation]:
            old = ev.pk
            # the columns a record decides come from the record, as the service would store them (record_projection.py)
            columns = evaluation_columns(Record.from_stored(ev.result)) if ev.result is not None else {}
            evaluations[old] = _insert(ev, kernel_id=kernels[ev.kernel_id], **columns).pk
        for d in by_model[DistributionResult]:
            _insert(d, evaluation_id=evaluations[d.evaluation_id])
        for flag in by_model[AuditFlag]:
            _insert(flag, kernel_id=kernels[flag.kernel_id], reviewed_by_id=None)
        return (
            f"loaded {src_llm.name} on {src_sub.hardware}: submission {sub.pk}, {len(kernels)} kernels, "
            f"{len(evaluations)} evaluations, {sum(1 for e in by_model[Evaluation] if e.correct)} correct"
        )

    def problems(self, rows: list[Any]) -> dict[int, int]:
        """Fixture problem pk -> this database's pk, importing the carried set first where it is the source."""
        out: dict[int, int] = {}
        imported: set[str] = set()
        for p in rows:
            key = {"problem_set": p.problem_set, "level": p.level, "problem_id": p.problem_id, "sha256": p.sha256}
            found = Problem.objects.filter(**key).first()
            carried = _carried_sets().get(p.problem_set)
            if found is None and carried and p.problem_set not in imported and carried[0].exists():
                problems_import_path(path=carried[0], problem_set=p.problem_set, demo=carried[1])
                imported.add(p.problem_set)
                found = Problem.objects.filter(**key).first()
            if found is None:
                latest = not Problem.objects.filter(
                    problem_set=p.problem_set, level=p.level, problem_id=p.problem_id, is_latest=True
                ).exists()
                old = p.pk
                out[old] = _insert(p, is_latest=latest).pk
                continue
            out[p.pk] = found.pk
        return out


def fixture_summary(path: Path) -> dict[str, Any]:
    """Counts of a fixture file by model (for tests and messages)."""
    counts: dict[str, int] = {}
    for row in json.loads(path.read_text()):
        counts[row["model"]] = counts.get(row["model"], 0) + 1
    return counts
