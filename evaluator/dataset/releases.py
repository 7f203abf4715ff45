"""Dataset releases: every export is a release with a name of its own, and a changelog says what changed since the
previous one.

A release is named by its sequence number in the export folder and its date (`r003-2026-12-04`); its folder is
`kbv-verdicts-<dataset version>-<release>/` and its manifest says the name, the previous release and the counts.
The export folder keeps `CHANGELOG.md` (newest release first) and `changelog.json`: per release, how many verdicts
were added, removed, changed verdict (its `verdict` object: status, correctness, speedup, distributions) or
changed otherwise (seeds revealed, superseded by a re-run), with their evaluation ids. Each release folder carries
the changelog as it stood when it was made, so a downloaded release says its own history.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

FOLDER_PREFIX = "kbv-verdicts-"
_FOLDER_RE = re.compile(r"^kbv-verdicts-(?P<version>[0-9][0-9.]*)-r(?P<seq>\d{3,})-(?P<date>\d{4}-\d{2}-\d{2})$")
CHANGELOG_MD = "CHANGELOG.md"
CHANGELOG_JSON = "changelog.json"
IDS_SHOWN = 50  # evaluation ids listed per kind in CHANGELOG.md (changelog.json has them all)


@dataclass(frozen=True, slots=True)
class Release:
    sequence: int
    day: str  # YYYY-MM-DD
    folder: Path

    @property
    def name(self) -> str:
        return release_name(self.sequence, self.day)


def release_name(sequence: int, day: str) -> str:
    return f"r{sequence:03d}-{day}"


def releases(out_dir: Path) -> list[Release]:
    """The releases already exported into `out_dir`, oldest first."""
    found = []
    for folder in Path(out_dir).glob(f"{FOLDER_PREFIX}*"):
        match = _FOLDER_RE.match(folder.name)
        if match and folder.is_dir() and (folder / "manifest.json").is_file():
            found.append(Release(int(match["seq"]), match["date"], folder))
    return sorted(found, key=lambda r: r.sequence)


def next_release(out_dir: Path, *, version: str, day: date) -> Release:
    """The release an export into `out_dir` makes now: one past the latest there, dated `day`."""
    done = releases(out_dir)
    sequence = done[-1].sequence + 1 if done else 1
    iso = day.isoformat()
    return Release(sequence, iso, Path(out_dir) / f"{FOLDER_PREFIX}{version}-{release_name(sequence, iso)}")


@dataclass(slots=True)
class Changes:
    """What one release changed against the previous one (all added for the first)."""

    release: str
    previous: str | None
    rows: int
    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    verdict_changed: list[int] = field(default_factory=list)  # the row's `verdict` differs
    other_changed: list[int] = field(default_factory=list)  # the rest of the row differs (seeds revealed, ...)

    def counts(self) -> dict[str, int]:
        return {
            "rows": self.rows,
            "added": len(self.added),
            "removed": len(self.removed),
            "verdict_changed": len(self.verdict_changed),
            "other_changed": len(self.other_changed),
        }

    def markdown(self, *, exported_at: str) -> str:
        since = f"since {self.previous}" if self.previous else "first release"
        counts = self.counts()
        lines = [
            f"## {self.release} ({exported_at}; {since})",
            "",
            f"{counts['rows']} verdicts: {counts['added']} added, {counts['removed']} removed, "
            f"{counts['verdict_changed']} with a changed verdict, {counts['other_changed']} changed otherwise.",
        ]
        for label, ids in (
            ("Added", self.added),
            ("Removed", self.removed),
            ("Verdict changed", self.verdict_changed),
            ("Changed otherwise", self.other_changed),
        ):
            if ids:
                shown = ", ".join(map(str, ids[:IDS_SHOWN])) + (" ..." if len(ids) > IDS_SHOWN else "")
                lines.append(f"- {label} (evaluation ids): {shown}")
        return "\n".join(lines) + "\n"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def row_digests(path: Path) -> dict[int, tuple[str, str]]:
    """{evaluation id: (digest of its verdict, digest of the whole row)} of a release's verdicts.jsonl."""
    out: dict[int, tuple[str, str]] = {}
    with Path(path).open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            out[int(row["evaluation_id"])] = (_digest(row.get("verdict")), _digest(row))
    return out


def changes_between(*, release: str, previous: Release | None, rows_path: Path, rows_name: str) -> Changes:
    """Compare a new release's rows with the previous release's (by evaluation id)."""
    now = row_digests(rows_path)
    before = row_digests(previous.folder / rows_name) if previous is not None else {}
    changes = Changes(release=release, previous=previous.name if previous else None, rows=len(now))
    changes.added = sorted(set(now) - set(before))
    changes.removed = sorted(set(before) - set(now))
    for pk in sorted(set(now) & set(before)):
        if now[pk][0] != before[pk][0]:
            changes.verdict_changed.append(pk)
        elif now[pk][1] != before[pk][1]:
            changes.other_changed.append(pk)
    return changes


def changelog_add(out_dir: Path, changes: Changes, *, exported_at: str) -> str:
    """Put `changes` at the top of the export folder's changelog (Markdown and JSON); returns the Markdown."""
    json_path = Path(out_dir) / CHANGELOG_JSON
    entries = json.loads(json_path.read_text()) if json_path.is_file() else []
    entries = [e for e in entries if e.get("release") != changes.release]
    entries.insert(0, {**asdict(changes), "counts": changes.counts(), "exported_at": exported_at})
    json_path.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
    sections = []
    for entry in entries:
        kept = Changes(**{k: entry[k] for k in Changes.__dataclass_fields__})
        sections.append(kept.markdown(exported_at=entry["exported_at"]))
    text = "# Changelog of the KernelBench-Verified verdicts dataset\n\nNewest release first.\n\n" + "\n".join(sections)
    (Path(out_dir) / CHANGELOG_MD).write_text(text)
    return text
