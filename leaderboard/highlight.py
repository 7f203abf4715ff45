"""Pygments HTML for Python sources (problem and inspector pages) and reference -> kernel diffs (inspector)."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Iterable
from typing import cast

from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

HIGHLIGHT_CACHE_SECONDS = 24 * 3600


def _memoised_html(kind: str, parts: tuple, render: Callable[[], str]) -> SafeString:
    """Highlighting costs tens of ms per page and sources never change (they are identified by content), so the
    HTML is cached by a digest of everything that shapes it."""
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()
    html = cast(str, cache.get_or_set(f"inspector:{kind}:{digest}", render, HIGHLIGHT_CACHE_SECONDS))
    return mark_safe(html)  # Pygments escapes the source; nothing else goes in


def highlight_python(source: str, *, anchor: str, hl_lines: Iterable[int] = ()) -> SafeString:
    """Pygments HTML with line numbers; each line has id `<anchor>-<n>` and `hl_lines` are highlighted.

    Pygments escapes the source itself, so the result is safe to embed."""
    lines = sorted(set(hl_lines))
    formatter = HtmlFormatter(linenos="table", anchorlinenos=True, lineanchors=anchor, hl_lines=lines, wrapcode=True)
    return _memoised_html("py", (source, anchor, lines), lambda: highlight(source, PythonLexer(), formatter))


def unified_diff_html(reference: str, kernel: str) -> SafeString:
    """Reference -> kernel as a highlighted unified diff (difflib), three lines of context."""
    return _memoised_html("diff", (reference, kernel), lambda: _unified_diff_html(reference, kernel))


def _unified_diff_html(reference: str, kernel: str) -> str:
    diff = difflib.unified_diff(
        reference.splitlines(keepends=True),
        kernel.splitlines(keepends=True),
        fromfile="reference (Model)",
        tofile="kernel (ModelNew)",
        n=3,
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
    return highlight(text or "(identical)\n", DiffLexer(), HtmlFormatter(wrapcode=True))
