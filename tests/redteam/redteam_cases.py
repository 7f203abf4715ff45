"""The red-team suite's cases: one kernel file each, with what the evaluator must say about it (redteam_suite.py runs
and judges them).

Every kernel file starts with a machine-readable header of `# redteam-<key>: <value>` comment lines:

    # redteam-class: A6                 catalogue id (docs/reward_hacks.md), or "legit"
    # redteam-problem: matmul.py        a file under tests/redteam/problems/
    # redteam-expect: incorrect         incorrect | rejected | not_faster (exploits), correct (legit)
    # redteam-max-speedup: 1.5          not_faster only: the measured speedup must stay at or below this
    # redteam-min-speedup: 1.5          legit only: the measured speedup must reach this (a real speedup)
    # redteam-device: cuda              cpu (default) or cuda
    # redteam-timeout: 60               seconds for the whole evaluation (default 180)
    # redteam-options: {"quick": true}  harness options (JSON) for this kernel, on top of {"quick": true}
    # redteam-control: gpu/legit_x        not_faster only: bound = CONTROL_FACTOR x that legit kernel's speedup
    # redteam-known-gap: <why>          the evaluator cannot catch it by design; reported, never silently skipped
    # redteam-why: <text>               what the kernel does (continuation lines start with "#   ")

A malformed header is an error, not a skip (CONTROL_FACTOR and the verdict rule: redteam_suite.py). Kernels live in
exploits/, legit/, abuse/ and gpu/ beside this file; files whose names start with "_" are not cases.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REDTEAM_DIR = Path(__file__).resolve().parent
PROBLEMS_DIR = REDTEAM_DIR / "problems"
KIND_DIRS = {
    "exploit": REDTEAM_DIR / "exploits",
    "legit": REDTEAM_DIR / "legit",
    "abuse": REDTEAM_DIR / "abuse",
    "gpu": REDTEAM_DIR / "gpu",
}
EXPLOIT_VERDICTS = ("incorrect", "rejected", "not_faster")
DEFAULT_TIMEOUT = 180.0
DEFAULT_MAX_SPEEDUP = 1.5
_HEADER = re.compile(r"^#\s*redteam-([a-z-]+):\s?(.*)$")


@dataclass(frozen=True)
class Case:
    """One kernel of the suite and what the evaluator must say about it."""

    path: Path
    kind: str  # exploit | legit | gpu
    cls: str
    problem: Path
    expect: str
    device: str = "cpu"
    max_speedup: float | None = None
    min_speedup: float | None = None
    timeout: float = DEFAULT_TIMEOUT
    known_gap: str = ""
    why: str = ""
    control: str = ""
    options: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.path.stem}"

    @property
    def is_legit(self) -> bool:
        return self.expect == "correct"


def parse_header(text: str) -> dict[str, str]:
    """The `# redteam-<key>: value` lines at the top of a kernel file (continuations `#   ...` join the last key)."""
    header: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        match = _HEADER.match(line)
        if match:
            last = match.group(1)
            header[last] = match.group(2).strip()
        elif last and line.startswith("#   "):
            header[last] += " " + line[4:].strip()
        elif line.strip() and not line.startswith("#"):
            break
    return header


def load_case(path: Path, kind: str) -> Case:
    """Parse and validate one kernel file's header; a malformed header is an error, not a skip."""
    header = parse_header(path.read_text())
    missing = [key for key in ("class", "problem", "expect") if key not in header]
    if missing:
        raise ValueError(f"{path}: header lacks redteam-{', redteam-'.join(missing)}")
    expect = header["expect"]
    allowed = ("correct",) if header["class"] == "legit" else EXPLOIT_VERDICTS
    if expect not in allowed:
        raise ValueError(f"{path}: redteam-expect {expect!r} not in {allowed}")
    problem = PROBLEMS_DIR / header["problem"]
    if not problem.is_file():
        raise ValueError(f"{path}: problem {problem} not found")
    max_speedup = float(header["max-speedup"]) if "max-speedup" in header else None
    if expect == "not_faster" and max_speedup is None:
        max_speedup = DEFAULT_MAX_SPEEDUP
    known = {
        "class",
        "problem",
        "expect",
        "device",
        "max-speedup",
        "min-speedup",
        "timeout",
        "known-gap",
        "why",
        "options",
    }
    return Case(
        path=path,
        kind=kind,
        cls=header["class"],
        problem=problem,
        expect=expect,
        device=header.get("device", "cuda" if kind == "gpu" else "cpu"),
        max_speedup=max_speedup,
        min_speedup=float(header["min-speedup"]) if "min-speedup" in header else None,
        timeout=float(header.get("timeout", DEFAULT_TIMEOUT)),
        known_gap=header.get("known-gap", ""),
        why=header.get("why", ""),
        options=json.loads(header["options"]) if "options" in header else {},
        control=header.get("control", ""),
        extra={k: v for k, v in header.items() if k not in known},
    )


def load_cases(kinds: Iterable[str] = ("exploit", "legit")) -> list[Case]:
    """Every kernel of the given kinds, sorted by id."""
    cases = []
    for kind in kinds:
        for path in sorted(KIND_DIRS[kind].glob("*.py")):
            if not path.name.startswith("_"):
                cases.append(load_case(path, kind))
    return cases
