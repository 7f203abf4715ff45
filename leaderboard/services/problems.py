"""Writes for KernelBench problems: reading problem files from a checkout or a JSONL, and importing them.

Import is idempotent by sha256: the same source imported twice changes nothing; a changed source for the same
(problem set, level, problem_id) becomes a new Problem row marked latest, and the old row (with every result that
ran against it) stays as it was.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from catalogue.models import Problem

# <id>_<Name>.py, as in KernelBench/level1/19_ReLU.py
PROBLEM_FILENAME_RE = re.compile(r"^(?P<id>\d+)_(?P<name>.+)\.py$")
LEVEL_DIR_RE = re.compile(r"^level(?P<level>\d+)$")

# Problems whose reference output is the same constant for every input under default initialisation
# (docs/protocol.md section 1). Matched on (level, id) *and* name, because other problem-set versions reuse the ids.
# Only the seed of the data: the import stores them as Problem.degenerate = CONFIRMED with this reason (migration
# catalogue 0003 did the same for problems already imported); others are found from the evaluations
# (evaluator.services.degenerate) and staff confirm or clear them.
KNOWN_DEGENERATE = {
    (2, 23, "Conv3d_GroupNorm_Mean"): "Reference output is constant (about 1e-9) for every input (Sakana case).",
    (2, 80, "Gemm_Max_Subtract_GELU"): "Reference output is always zero: max(dim=1) minus its own mean is 0.",
    (2, 83, "Conv3d_GroupNorm_Min_Clamp_Dropout"): "Reference output is always zero: min(x, 0) then clamp(0, 1).",
}
KNOWN_SOURCE = "known list (docs/protocol.md section 1)"
CORE_LEVELS = {1, 2, 3}  # level 4 (Hugging Face models) needs downloaded weights: not part of the benchmark


@dataclass(frozen=True)
class ProblemFile:
    """One problem source as read from disk, before validation."""

    level: int
    problem_id: int
    name: str
    filename: str
    source: str
    origin: str


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    new_versions: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)

    @property
    def imported(self) -> int:
        return len(self.created) + len(self.new_versions)

    def summary(self) -> str:
        return (
            f"{len(self.created)} new, {len(self.new_versions)} new versions, {len(self.unchanged)} unchanged, "
            f"{len(self.skipped)} skipped"
        )


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def problem_source_errors(source: str) -> str | None:
    """Why a source is not a usable KernelBench problem, or None. Static only: problem code is never run here."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error on line {exc.lineno}: {exc.msg}"
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing = [
        name
        for name, ok in [
            ("class Model", "Model" in classes),
            ("get_inputs()", "get_inputs" in functions),
            ("get_init_inputs()", "get_init_inputs" in functions),
        ]
        if not ok
    ]
    if missing:
        return "missing " + ", ".join(missing)
    return None


def read_problem_files(path: Path) -> tuple[list[ProblemFile], list[tuple[str, str]]]:
    """Read problems from a KernelBench checkout (or its KernelBench/ folder, or a folder of level*/ folders)
    or from a JSONL file in the format of shared/datasets/kernelbench/problems.jsonl.

    Returns the files found and the (name, reason) of entries that could not even be read.
    """
    path = Path(path)
    if path.is_file():
        return _read_jsonl(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is neither a JSONL file nor a directory")
    root = path / "KernelBench" if (path / "KernelBench").is_dir() else path
    level_dirs = sorted(d for d in root.iterdir() if d.is_dir() and LEVEL_DIR_RE.match(d.name))
    if not level_dirs:
        raise FileNotFoundError(f"no level<N>/ folders under {root}: not a KernelBench checkout")
    files: list[ProblemFile] = []
    bad: list[tuple[str, str]] = []
    for level_dir in level_dirs:
        level = int(LEVEL_DIR_RE.match(level_dir.name)["level"])  # type: ignore[index]  # listed because it matched
        for file in sorted(level_dir.glob("*.py")):
            label = f"{level_dir.name}/{file.name}"
            m = PROBLEM_FILENAME_RE.match(file.name)
            if not m:
                bad.append((label, "file name is not <id>_<Name>.py"))
                continue
            try:
                source = file.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                bad.append((label, "not UTF-8"))
                continue
            files.append(ProblemFile(level, int(m["id"]), m["name"], file.name, source, str(file.relative_to(path))))
    return files, bad


def _read_jsonl(path: Path) -> tuple[list[ProblemFile], list[tuple[str, str]]]:
    files: list[ProblemFile] = []
    bad: list[tuple[str, str]] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            label = f"{path.name}:{lineno}"
            try:
                row = json.loads(line)
                level, problem_id, source = int(row["level"]), int(row["problem_id"]), row["source"]
                if not isinstance(source, str):
                    raise TypeError("source is not a string")
            except (ValueError, KeyError, TypeError) as exc:
                bad.append((label, f"not a problem record: {exc}"))
                continue
            filename = row.get("filename") or f"{problem_id}_{row.get('name', 'problem')}.py"
            name = row.get("name") or PROBLEM_FILENAME_RE.match(filename)["name"]  # type: ignore[index]
            if row.get("sha256") and row["sha256"] != source_sha256(source):
                bad.append((f"{label} ({filename})", "sha256 does not match the source"))
                continue
            files.append(ProblemFile(level, problem_id, name, filename, source, row.get("upstream_path", label)))
    return files, bad


@transaction.atomic
def problems_import(*, files: list[ProblemFile], problem_set: str, demo: bool = False) -> ImportReport:
    """Import problem files into one problem set. Bad files are reported by name and skipped."""
    report = ImportReport()
    existing = {(p.level, p.problem_id, p.sha256): p for p in Problem.objects.filter(problem_set=problem_set)}
    for f in files:
        label = f"L{f.level}/{f.problem_id} {f.filename}"
        if error := problem_source_errors(f.source):
            report.skipped.append((label, error))
            continue
        sha = source_sha256(f.source)
        if (f.level, f.problem_id, sha) in existing:
            report.unchanged.append(label)
            continue
        had_older = Problem.objects.filter(
            problem_set=problem_set, level=f.level, problem_id=f.problem_id, is_latest=True
        ).update(is_latest=False)
        reason = KNOWN_DEGENERATE.get((f.level, f.problem_id, f.name), "")
        existing[(f.level, f.problem_id, sha)] = Problem.objects.create(
            problem_set=problem_set,
            level=f.level,
            problem_id=f.problem_id,
            name=f.name,
            filename=f.filename,
            source=f.source,
            sha256=sha,
            origin=f.origin,
            core=f.level in CORE_LEVELS,
            active=not reason,
            inactive_reason=reason,
            degenerate=Problem.Degenerate.CONFIRMED if reason else Problem.Degenerate.NO,
            degenerate_evidence={"reason": reason, "source": KNOWN_SOURCE} if reason else {},
            is_latest=True,
            is_demo=demo,
        )
        (report.new_versions if had_older else report.created).append(label)
    return report


def problems_import_path(*, path: Path, problem_set: str, demo: bool = False) -> ImportReport:
    """Read then import; unreadable entries are reported as skipped like invalid ones."""
    files, bad = read_problem_files(path)
    report = problems_import(files=files, problem_set=problem_set, demo=demo)
    report.skipped[:0] = bad
    return report


def problem_deactivate(*, problem: Problem, reason: str) -> Problem:
    """Exclude a problem from rankings (e.g. the evaluator found its reference output constant)."""
    if not reason:
        raise ValueError("a reason is required to deactivate a problem")
    Problem.objects.filter(pk=problem.pk).update(active=False, inactive_reason=reason[:500])
    problem.refresh_from_db()
    return problem
