"""The Content-Security-Policy breaks no page: charts, the inspector and the API docs render with no violation."""

from __future__ import annotations

import pytest

from tests.browser.test_pages_in_browser import CHARTS, board  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pages_render_under_the_csp_without_violations(page, board):  # noqa: F811
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    response = page.goto("/?level=1")
    assert "script-src 'self';" in response.headers["content-security-policy"]
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart} .main-svg", timeout=15000)
    page.goto(f"/kernels/{board['cheat'].pk}/")
    page.wait_for_selector("h1")
    page.goto(f"/problems/{board['problems'][0].pk}/")
    page.goto(f"/llms/{board['cheat'].llm_id}/")
    page.goto("/api/docs/")
    page.wait_for_selector("#swagger-ui .info", timeout=15000)
    assert violations == []
    assert page.js_errors == []
