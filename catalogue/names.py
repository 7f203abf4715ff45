"""LLM names: the visible form kept, and the skeleton that look-alike names share.

A name is stored without invisible characters (zero-width spaces and joiners, bidi controls, soft hyphens: Unicode
category Cf) and with its whitespace collapsed. Two names are the same LLM for ownership when their skeletons are
equal: NFKC, case-folded, every dash variant as "-", and every character that the Unicode confusables data
(confusable-homoglyphs) lists as a look-alike of a Latin letter or digit replaced by that letter.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from confusable_homoglyphs import confusables

# Dash punctuation (Pd) and the minus-like signs outside it.
_DASHES = {"\u2212", "\u2796", "\ufe63", "\uff0d", "\u02d7", "\u2043"}


def name_visible(name: str) -> str:
    """`name` without invisible or bidi characters (format, category Cf) and with whitespace collapsed."""
    kept = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    return " ".join(kept.split())


@lru_cache(maxsize=4096)
def _latin(ch: str) -> str:
    """The Latin look-alike of one non-ASCII character, or the character itself."""
    found = confusables.is_confusable(ch, greedy=True, preferred_aliases=["latin", "common"])
    for item in found or ():
        for glyph in item.get("homoglyphs", ()):
            candidate = glyph.get("c", "")
            if candidate and candidate.isascii():
                return candidate.casefold()
    return ch


def name_skeleton(name: str) -> str:
    """The form look-alike names share (see the module docstring): compare skeletons, store the visible name."""
    text = unicodedata.normalize("NFKC", name_visible(name)).casefold()
    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
        elif unicodedata.category(ch) == "Pd" or ch in _DASHES:
            out.append("-")
        elif ch.isspace():
            out.append(" ")
        else:
            out.append(_latin(ch))
    return unicodedata.normalize("NFKC", "".join(out)).casefold()
