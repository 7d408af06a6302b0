"""Bad input never crashes the compiler: every program of programs/ with a
few tokens deleted, inserted, replaced or copied (seeded, so a failure
reproduces) either compiles or raises CompileError with its file, line,
column and the source line under a caret."""
from __future__ import annotations

import random
import re

import pytest

import isa
from conftest import PROGRAMS
from isa.diagnostics import CompileError

TOKEN = re.compile(r"[A-Za-z_]\w*|\d+\.?\d*f?|\S")
INSERTED = ["(", ")", "{", "}", ";", ",", "*", "&", "[", "]", "<", ">", "int", "float", "0", "-1",
            "__shared__", "return", "if", "template", "::", "const", "1e40f", ".", "->", "=", "?",
            ":", '"', "'", "#", "\\"]
PER_PROGRAM = 20


def mangled(src: str, rng: random.Random) -> str:
    """`src` with one to three token edits."""
    for _ in range(rng.randint(1, 3)):
        spans = [(m.start(), m.end()) for m in TOKEN.finditer(src)]
        a, b = rng.choice(spans)
        edit = rng.randrange(4)
        if edit == 0:
            src = src[:a] + src[b:]
        elif edit == 1:
            src = src[:a] + rng.choice(INSERTED) + " " + src[a:]
        elif edit == 2:
            src = src[:a] + rng.choice(INSERTED) + src[b:]
        else:
            x, y = rng.choice(spans)
            src = src[:a] + src[x:y] + " " + src[a:]
    return src


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.cu")), ids=lambda p: p.stem)
def test_a_mangled_program_compiles_or_gives_a_diagnostic_with_a_caret(path):
    rng = random.Random(path.stem)
    for k in range(PER_PROGRAM):
        src = mangled(path.read_text(), rng)
        try:
            isa.compile_source(src, filename="mangled.cu")
        except CompileError as e:
            assert e.file == "mangled.cu" or e.file.endswith(".h"), (k, str(e))
            assert e.line >= 1 and e.col >= 1 and e.source_line is not None, (k, str(e))
            assert str(e).splitlines()[-1].strip() == "^", (k, str(e))
