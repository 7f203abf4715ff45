"""LLM names: the visible form kept, and the skeletons that look-alike names share.

A name is stored without the characters that render as nothing (controls, format characters such as zero-width
spaces and bidi controls, the Default_Ignorable_Code_Point set: the combining grapheme joiner, variation selectors,
Hangul fillers...) and with its whitespace collapsed. Its skeleton is the UTS #39 one (Unicode confusable
detection), taken before any case folding, so that a Cyrillic or Greek capital still maps to its Latin
look-alike: NFD with every combining mark (Mn, Me) dropped (`G` with a dot below looks like `G`), each character
replaced by its prototype in Unicode's confusables.txt and every dash variant by `-`, the same again on the NFKC
form (fullwidth, mathematical and other compatibility letters become plain ones), and only then case-folded.

Names are the same LLM whatever their case, and some letters look like another Latin letter in one case only (`I`
like `l` but `i` not; Cyrillic `Т` like `T` but `т` not; Cyrillic `г` like `r` but `Г` not). So a name has three
skeletons, of the name as written, in capitals and in small letters (`name_skeletons`), and two names are
look-alikes when they share one. Together they catch any case variant of a name with one or more letters swapped
for look-alikes, except a variant that writes two case-sensitive letters (`I`/`i`) of the name in different cases
and also uses both a capitals-only and a small-letters-only look-alike (such as `Iiг-Т` for `iir-t`).

The confusables data comes from confusable-homoglyphs, which keeps each line of confusables.txt (source ->
prototype) in both directions. Each source has one prototype, so the pairs form stars around the prototypes; the
prototype is the star's centre, and for a lone pair the multi-character side (sources are single code points),
else the ASCII side, else the lower code point (any consistent choice gives the same equal-skeleton relation).
ICU's SpoofChecker computes the same skeleton, but PyICU ships no wheels (it needs ICU's headers and a C++
compiler at install) and the PyPI repackagings with a bundled ICU weigh 65 MB for this one function.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from functools import lru_cache

from confusable_homoglyphs.confusables import confusables_data

# Dash punctuation (Pd) and the minus-like signs outside it.
_DASHES = {"\u2212", "\u2796", "\ufe63", "\uff0d", "\u02d7", "\u2043"}
# Code points that render as nothing, besides categories Cc/Cf/Cs/Co/Cn: Unicode's Default_Ignorable_Code_Point
# (DerivedCoreProperties.txt; the standard library has no lookup for it, and it changes only by adding to the
# reserved ranges already listed here) and the braille blank, which fonts draw empty.
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),  # Mongolian variation selectors
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x2800, 0x2800),  # braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement
)
_INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn"}
_MARKS = {"Mn", "Me"}
_LRM = "\u200e"  # confusable-homoglyphs wraps right-to-left characters in it for display


def is_invisible(ch: str) -> bool:
    """Whether one character renders as nothing (or as something no font agrees on) and so is dropped from names."""
    if unicodedata.category(ch) in _INVISIBLE_CATEGORIES:
        return True
    point = ord(ch)
    return any(low <= point <= high for low, high in _IGNORABLE_RANGES)


def name_visible(name: str) -> str:
    """`name` without the characters that render as nothing (see `is_invisible`), whitespace collapsed."""
    kept = "".join(ch for ch in name if ch.isspace() or not is_invisible(ch))
    return " ".join(kept.split())


@lru_cache(maxsize=1)
def prototypes() -> dict[str, str]:
    """Each confusable source character and its prototype (the UTS #39 mapping), rebuilt from the library's pairs."""
    neighbours: dict[str, set[str]] = defaultdict(set)
    for key, entries in confusables_data.items():
        a = key.replace(_LRM, "")
        for entry in entries:
            b = entry["c"].replace(_LRM, "")
            if a and b and a != b:
                neighbours[a].add(b)
                neighbours[b].add(a)
    mapping: dict[str, str] = {}
    for node, around in neighbours.items():
        if len(node) != 1:
            continue  # a multi-character string is only ever a prototype
        if len(around) > 1:
            continue  # the centre of a star: a prototype itself
        (other,) = around
        if len(neighbours[other]) > 1 or _prototype_side(other, node):
            mapping[node] = other
    return mapping


def _prototype_side(a: str, b: str) -> bool:
    """For a lone pair, whether `a` rather than `b` is the prototype (see the module docstring)."""
    if len(a) != len(b):
        return len(a) > len(b)
    if a.isascii() != b.isascii():
        return a.isascii()
    return a < b


def _unmarked(text: str) -> str:
    """`text` in NFD without its combining marks and invisible characters."""
    return "".join(
        ch
        for ch in unicodedata.normalize("NFD", text)
        if unicodedata.category(ch) not in _MARKS and not is_invisible(ch)
    )


def _mapped(text: str) -> str:
    """Each character replaced by its confusables prototype, each dash variant by `-`."""
    table = prototypes()
    dashes = (ch if not (unicodedata.category(ch) == "Pd" or ch in _DASHES) else "-" for ch in text)
    return "".join(" " if ch.isspace() else table.get(ch, ch) for ch in dashes)


def _skeleton(text: str) -> str:
    """The UTS #39 skeleton of `text`, before and after NFKC, then case-folded (see the module docstring)."""
    text = _mapped(_unmarked(text))  # before NFKC too: it turns a lunate sigma, which looks like C, into a sigma
    text = _mapped(_unmarked(unicodedata.normalize("NFKC", text)))
    return " ".join(_unmarked(text.casefold()).split())


def name_skeletons(name: str) -> tuple[str, str, str]:
    """The skeletons of `name` as written, in capitals and in small letters (see the module docstring): two names
    are look-alikes when they share one."""
    text = _unmarked(name_visible(name))  # marks first: upper() makes the iota subscript a capital iota
    return (_skeleton(text), _skeleton(text.upper()), _skeleton(text.lower()))


def name_skeleton(name: str) -> str:
    """The skeleton of `name` as written: the UTS #39 skeleton of its NFKC form, then case-folded."""
    return name_skeletons(name)[0]


def name_skeleton_fields(name: str) -> dict[str, str]:
    """The LLM row's skeleton columns for `name` (catalogue.models.LLM), cut to their length."""
    written, capitals, small = name_skeletons(name)
    return {"name_skeleton": written[:200], "name_skeleton_upper": capitals[:200], "name_skeleton_lower": small[:200]}
