"""Plain data types of the bundle parser: what came out of an upload, and what happened to each file in it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.untrusted import storable_text

ACCEPTED = "accepted"
SKIPPED = "skipped"


class BundleError(ValueError):
    """The whole bundle is rejected. `report` lists what was found per file before the rejection, if anything.
    `status` is the HTTP status the web form and the API answer with."""

    status = 400

    def __init__(self, message: str, report: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.report = report or []


class BundleTooLarge(BundleError):
    """The upload is over BUNDLE_MAX_BYTES (413 Content Too Large)."""

    status = 413


@dataclass(frozen=True, slots=True)
class BundleEntry:
    """One kernel source for one (level, problem_id, sample); `report_index` points at its row in the report."""

    level: int
    problem_id: int
    sample: int
    source: str
    origin: str
    report_index: int

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.level, self.problem_id, self.sample)


@dataclass(slots=True)
class FileReport:
    """What the parser did with one file (or JSON key, or JSONL line) of the bundle."""

    name: str
    status: str  # ACCEPTED | SKIPPED
    reason: str = ""
    level: int | None = None
    problem_id: int | None = None
    sample: int | None = None

    def as_dict(self) -> dict[str, Any]:
        # Names come from the bundle (JSON keys, member names): keep them storable and renderable.
        return {
            "name": storable_text(self.name),
            "status": self.status,
            "reason": storable_text(self.reason),
            "level": self.level,
            "problem_id": self.problem_id,
            "sample": self.sample,
        }


@dataclass(slots=True)
class ParsedBundle:
    """The parser's output: accepted entries in bundle order, the per-file report, and what the bundle claims."""

    format: str
    sha256: str
    entries: list[BundleEntry] = field(default_factory=list)
    report: list[FileReport] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    claimed_results: dict[str, Any] | None = None

    def report_dicts(self) -> list[dict[str, Any]]:
        return [item.as_dict() for item in self.report]

    def drop(self, entry: BundleEntry, reason: str) -> None:
        """Turn an accepted entry into a skipped one (e.g. its problem is unknown), keeping its report row."""
        row = self.report[entry.report_index]
        row.status, row.reason = SKIPPED, reason
        self.entries = [e for e in self.entries if e is not entry]
