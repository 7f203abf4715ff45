"""Red-team suite fixtures: every selected CPU case is evaluated once per session (two at a time, timing-sensitive
ones alone), and the session ends with the summary line "redteam: caught X of Y, legitimate Z of W"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redteam_suite  # needs the path above


@pytest.fixture(scope="session")
def redteam_results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Results of every CPU case that this session selected, evaluated up front so that they can run in parallel."""
    wanted = set()
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("case") if callspec else None
        if isinstance(case, redteam_suite.Case) and case.device == "cpu":
            wanted.add(case)
    cases = sorted(wanted, key=lambda c: c.id)
    return redteam_suite.run_cases(cases, jobs=2, work_root=tmp_path_factory.mktemp("redteam-work"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    verdicts = redteam_suite.VERDICTS  # filled by test_redteam.py (one module object: imported by name)
    if verdicts:
        line = redteam_suite.summary_line(verdicts.values())
        terminalreporter.write_sep("-", "red team")
        terminalreporter.write_line(f"redteam: {line}")
        for verdict in verdicts.values():
            if not verdict.ok:
                terminalreporter.write_line(
                    f"  not {'passed' if verdict.legit else 'caught'}: {verdict.case_id} "
                    f"({verdict.observed}) {verdict.detail}"
                )
