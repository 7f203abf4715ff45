"""C++/CUDA code inside a kernel's strings (the sources handed to `load_inline`), as a fingerprint compares it.

Its comments and the whitespace between its tokens are dropped, as the Python around it; preprocessor lines keep
their line breaks, since a directive ends at its line's end. Names inside it are not renamed: that would take a C++
parser, and a renamed CUDA variable still makes another fingerprint.
"""

from __future__ import annotations

import re

_MARKERS = ("#include", "__global__", "__device__", "torch::", "at::Tensor", "<<<", "cudaStream")
_WORD = re.compile(r"\w")


def looks_like_c(text: str) -> bool:
    """Whether a string is C++/CUDA source (as KernelBench's `load_inline` kernels hold it)."""
    return "\n" in text and any(marker in text for marker in _MARKERS)


def _squeeze(code: str) -> str:
    """`code` (no literals, no comments) with whitespace kept only where it separates two words."""
    lines = []
    for line in code.split("\n"):
        stripped = " ".join(line.split())
        if stripped.startswith("#"):
            lines.append("\n" + stripped + "\n")
        elif stripped:
            lines.append(stripped)
    text = " ".join(lines)
    out = []
    for i, ch in enumerate(text):
        if ch == " ":
            before, after = text[i - 1 : i], text[i + 1 : i + 2]
            if not (_WORD.match(before) and _WORD.match(after)):
                continue
        out.append(ch)
    return "".join(out)


def _pieces(text: str) -> list[str]:
    """`text` cut into code, string or character literals (kept whole) and comments (as one space), in one pass:
    a regular expression would restart at every quote of an unterminated literal (quadratic on a crafted string)."""
    pieces: list[str] = []
    start = i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            end = i + 1
            while end < n and text[end] != ch and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
            pieces += [_squeeze(text[start:i]), text[i:end]]
            start = i = end
        elif text.startswith("//", i) or text.startswith("/*", i):
            close = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            end = n if close < 0 else close + (0 if text[i + 1] == "/" else 2)
            pieces += [_squeeze(text[start:i]), " "]
            start = i = end
        else:
            i += 1
    pieces.append(_squeeze(text[start:]))
    return pieces


def normalise_c(text: str) -> str:
    """`text` without comments and without the whitespace that does not separate two words."""
    return "\n".join(line for line in _squeeze_joins(_pieces(text)).split("\n") if line)


def _squeeze_joins(parts: list[str]) -> str:
    """Join the pieces, keeping one space only between two words that a comment had separated."""
    out = ""
    for part in parts:
        if part == " ":
            out += " "
            continue
        if out.endswith(" ") and not (_WORD.match(out[-2:-1]) and _WORD.match(part[:1])):
            out = out[:-1]
        out += part
    return out.strip()
