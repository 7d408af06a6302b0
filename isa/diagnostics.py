"""Compile diagnostics: file:line:col, the source line, a caret, one sentence."""
from __future__ import annotations

from typing import Optional

from .ir import Loc


def render(message: str, loc: Loc, source_line: Optional[str]) -> str:
    """Format one diagnostic the way compilers do (gcc/clang style)."""
    head = f"{loc.file}:{loc.line}:{loc.col}: error: {message}"
    if source_line is None:
        return head
    line = source_line.rstrip("\n").expandtabs(1)
    caret = " " * max(loc.col - 1, 0) + "^"
    return f"{head}\n{line}\n{caret}"


class CompileError(Exception):
    """A kernel source that cannot be compiled. `str(e)` is the full
    diagnostic; `.loc`, `.message` and `.source_line` give its parts."""

    def __init__(self, message: str, loc: Loc, source_line: Optional[str] = None):
        self.message = message
        self.loc = loc
        self.source_line = source_line
        super().__init__(render(message, loc, source_line))

    @property
    def file(self) -> str:
        """The file of the error (as named to the compiler, or an #include'd one)."""
        return self.loc.file

    @property
    def line(self) -> int:
        """1-based line of the error in that file."""
        return self.loc.line

    @property
    def col(self) -> int:
        """1-based column the caret points at."""
        return self.loc.col
