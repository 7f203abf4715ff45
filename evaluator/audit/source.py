"""A parsed kernel file: the Python AST plus the line ranges of the embedded C++/CUDA source strings."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property

# A string constant counts as native source when it looks like C++/CUDA rather than prose.
_NATIVE_HINT = re.compile(
    r"__global__|__device__|#include|#define|torch::|at::|<<<|\bcuda[A-Z]\w*\(|\bvoid\s+\w+\s*\(|"
    r"\b(?:float|int|double|half)\s*\*"
)


@dataclass
class KernelSource:
    """The kernel text with helpers to quote lines; `tree` is None when the file does not parse."""

    text: str
    tree: ast.Module | None = None
    syntax_error: str = ""
    native_ranges: list[tuple[int, int]] = field(default_factory=list)  # 1-based inclusive line ranges

    @classmethod
    def parse(cls, text: str) -> KernelSource:
        src = cls(text=text)
        try:
            src.tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:  # null bytes; the parser's stack
            src.syntax_error = f"{type(exc).__name__}: {exc or 'nested too deeply for the parser'}"
            # Without an AST every line may hold native code; the regex rules then scan the whole file.
            src.native_ranges = [(1, len(src.lines))]
            return src
        for node in ast.walk(src.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NATIVE_HINT.search(node.value):
                src.native_ranges.append((node.lineno, node.end_lineno or node.lineno))
        return src

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def line(self, number: int) -> str:
        """The verbatim text of 1-based line `number`, stripped of surrounding whitespace."""
        if 1 <= number <= len(self.lines):
            return self.lines[number - 1].strip()
        return ""

    def quote_node(self, node: ast.AST) -> tuple[tuple[int, ...], str]:
        """Lines and a verbatim quote (the node's first line) for an AST node."""
        start = getattr(node, "lineno", 0)
        end = getattr(node, "end_lineno", start) or start
        return tuple(range(start, min(end, start + 5) + 1)), self.line(start)

    def native_lines(self) -> list[tuple[int, str]]:
        """(line number, raw text) for every line inside an embedded C++/CUDA string, comments dropped."""
        seen: set[int] = set()
        out: list[tuple[int, str]] = []
        for lo, hi in self.native_ranges:
            for number in range(lo, hi + 1):
                if number in seen or number > len(self.lines):
                    continue
                seen.add(number)
                code = self.lines[number - 1].split("//", 1)[0]
                if code.strip():
                    out.append((number, code))
        return sorted(out)

    @property
    def native_text(self) -> str:
        return "\n".join(code for _, code in self.native_lines())
