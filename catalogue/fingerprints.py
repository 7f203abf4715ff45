"""A kernel source's fingerprint: the same code with other comments, docstrings, formatting, local names, no-op
statements or number spellings has the same one.

A source that parses is fingerprinted by its normalised syntax tree (`catalogue.fingerprint_ast`, which says what
it folds together and what it keeps). The parser refuses what is nested too deep for it (a crafted file raises,
it does not exhaust memory: a dense 512 KiB file, KERNEL_MAX_BYTES, takes a few seconds and about 250 MB), and
every walk after it is iterative. A source that does not parse (it could not be imported either) is fingerprinted by its
token stream, with the standard tokenizer (linear time and memory, no recursion). What that drops or normalises:

- comments and non-logical line breaks (blank lines, breaks inside brackets);
- statements made of string literals alone (docstrings, and any other bare string: neither does anything);
- string spelling: quotes, prefixes and escapes compare by value (`'a'`, `"a"` and a triple-quoted `a` are one);
- a comma just before a closing bracket when another comma stands at the same depth (`f(a, b,)` is `f(a, b)`;
  `(a,)` keeps its comma: it is a tuple);
- whitespace between tokens, indentation width (INDENT/DEDENT tokens keep the structure).

A file the tokenizer refuses (a syntax error) falls back to its text with blank lines and trailing spaces removed,
so two byte-different broken files still differ, and the fingerprint never raises.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize

from catalogue.fingerprint_ast import parse_normalised

FINGERPRINT_VERSION = "v2"  # v1: the token stream only

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_OPEN, _CLOSE = "([{", ")]}"


def _string_value(text: str) -> str:
    """A string literal by value (f-strings and anything odd keep their spelling)."""
    try:
        value = ast.literal_eval(text)  # one literal token: no recursion, no evaluation
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return repr(value)


def _tokens(source: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _SKIP:
            continue
        text = tok.string
        if tok.type == tokenize.STRING:
            text = _string_value(text)
        elif tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE):
            text = ""
        out.append((tok.type, text))
    return out


def _drop_bare_strings(tokens: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Remove logical lines that are string literals only (docstrings)."""
    out: list[tuple[int, str]] = []
    line: list[tuple[int, str]] = []
    for tok in tokens:
        line.append(tok)
        if tok[0] == tokenize.NEWLINE:
            body = [t for t in line if t[0] not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE)]
            if body and all(t[0] == tokenize.STRING for t in body):
                line = [t for t in line if t[0] in (tokenize.INDENT, tokenize.DEDENT)]
            out.extend(line)
            line = []
    out.extend(line)
    return out


def _drop_trailing_commas(tokens: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Drop a comma right before a closing bracket when its bracket holds another comma at the same depth."""
    commas: list[int] = []  # commas seen at each open bracket's depth
    out: list[tuple[int, str]] = []
    for tok in tokens:
        kind, text = tok
        if kind == tokenize.OP and text in _OPEN:
            commas.append(0)
        elif kind == tokenize.OP and text in _CLOSE:
            count = commas.pop() if commas else 0
            if out and out[-1] == (tokenize.OP, ",") and count >= 2:
                out.pop()
        elif kind == tokenize.OP and text == "," and commas:
            commas[-1] += 1
        out.append(tok)
    return out


def source_fingerprint(source: str) -> str:
    """The SHA-256 of the source's normalised tree, else of its normalised token stream (see the module
    docstring); never raises."""
    try:
        tree = parse_normalised(source)
    except Exception:  # an upload never fails on its fingerprint: the token stream still makes one
        tree = None
    if tree is not None:
        return hashlib.sha256(f"{FINGERPRINT_VERSION}\x00ast\x00{tree}".encode()).hexdigest()
    try:
        tokens = _drop_trailing_commas(_drop_bare_strings(_tokens(source)))
        text = "\x00".join(f"{kind}:{value}" for kind, value in tokens)
    except (tokenize.TokenError, SyntaxError, ValueError, MemoryError, RecursionError):
        lines = (line.rstrip() for line in source.splitlines())
        text = "raw:" + "\n".join(line for line in lines if line)
    return hashlib.sha256(f"{FINGERPRINT_VERSION}\x00{text}".encode()).hexdigest()
