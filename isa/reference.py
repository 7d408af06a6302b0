"""The generated parts of isa/README.md: what the front end's tables accept
and reject, written from the tables themselves so the reference cannot
drift from the code.

    python -m isa.reference          # rewrite the generated parts of isa/README.md
    python -m isa.reference --check  # exit 1 if they are out of date

Each generated part sits between `<!-- generated: NAME -->` and
`<!-- end generated -->`; the prose around them is written by hand.
tests/test_isa_reference.py checks the committed file is current.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from . import builtins as B
from . import system_headers, unsupported

README = Path(__file__).resolve().parent / "README.md"
_BLOCK = re.compile(r"(<!-- generated: (\w+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names))


def _tname(t) -> str:
    return getattr(t, "name", None) or str(t)


def builtins_section() -> str:
    """The built-in functions and types, by group, from isa/builtins.py."""
    math_fixed = sorted(n for n, (_, t, _) in B.MATH.items() if t is not None)
    math_over = sorted(n for n, (_, t, _) in B.MATH.items() if t is None)
    atomics = sorted(n for n in B.ATOMICS if not n.endswith(("_block", "_system")))
    rows = [
        ("math, overloaded on float and double", _names(math_over)),
        ("math, one type (`f` suffix: float; `__*_rn`, `_rz`, `_ru`, `_rd`: rounded as named)", _names(math_fixed)),
        ("the float taken apart, exact as on the GPU (`f`: float; else overloaded on float and double); "
         "`sincos`: `sin` and `cos` through two pointers", _names(B.FLOAT_PARTS)),
        ("rounding to `long` (`ll`: `long long`)", _names(B.ROUND_TO_INTEGER)),
        ("Bessel functions of integer order (`int n`, then x: float for the `f` forms, else overloaded)",
         _names(B.INTEGER_ORDER)),
        ("classification (return bool)", _names(B.CLASSIFY)),
        ("bit and integer intrinsics", _names(B.BITOPS)),
        ("bit reinterpretation", _names(B.REINTERPRET)),
        ("conversions with rounding", _names(B.CONVERSIONS)),
        ("arithmetic with a rounding mode (the plain operator; no contraction)", _names(B.ROUNDED_ARITH)),
        ("atomics (also `_block` and `_system` variants)", _names(atomics)),
        ("warp shuffles", _names(B.SHUFFLES)),
        ("warp votes", _names(B.VOTES) + ", `__activemask`"),
        ("barriers and fences", _names(B.FENCES) + ", `__syncwarp`"),
        ("cache-hinted loads and stores (plain accesses here)", _names(B.LOADS + B.STORES)),
        ("integer min/max/abs", _names(["min", "max", "abs", "llabs", "labs", "umin", "umax",
                                        "llmin", "llmax", "ullmin", "ullmax"])),
        ("constants", _names(["__builtin_inff", "__builtin_inf", "__builtin_nanf", "__builtin_nan"])
         + "; `nan`, `nanf` (a string literal tag: its payload as libdevice reads it)"),
    ]
    out = ["| group | functions |", "|---|---|"]
    out += [f"| {g} | {f} |" for g, f in rows]
    types = sorted(B.ATOMIC_TYPES.items())
    out += ["", "Atomic operand types (CUDA C Programming Guide, \"Atomic Functions\"):", "",
            "| atomic | types |", "|---|---|"]
    out += [f"| `{op}` | {', '.join(_tname(t) for t in ts)} |" for op, ts in types]
    vec = sorted(n for n in B.VECTOR_TYPES if n != "dim3")
    out += ["", f"Vector types ({len(vec)}, with `make_NAME(...)` constructors and `.x .y .z .w`): "
            + _names(vec) + "; and `dim3`.",
            "", "Scalar typedefs known without a header: " + _names(B.SCALAR_TYPEDEFS) + ".",
            "", "Built-in variables: " + _names(B.SPECIAL_VARS) + ", `warpSize`."]
    return "\n".join(out)


def legacy_section() -> str:
    """Legacy warp functions and the _sync function a diagnostic names instead."""
    out = ["| legacy (rejected) | use |", "|---|---|"]
    out += [f"| `{old}` | `{new}` |" for old, new in sorted(B.LEGACY.items())]
    return "\n".join(out)


def unsupported_section() -> str:
    """Every construct the front end names as unsupported, with its message."""
    groups = [("keywords", unsupported.KEYWORDS), ("functions (when called)", unsupported.CALLS),
              ("type names", unsupported.NAMES), ("punctuation", unsupported.PUNCT),
              ("headers", system_headers.UNSUPPORTED_HEADERS)]
    out = ["| construct | kind | diagnostic |", "|---|---|---|"]
    for kind, table in groups:
        for name, msg in sorted(table.items()):
            out.append(f"| `{name}` | {kind} | {msg.replace('|', '/')} |")
    if B.UNSUPPORTED_MATH:
        out += ["", "Math functions named as unsupported (not in the IR's intrinsic set): "
                + _names(B.UNSUPPORTED_MATH) + "."]
    return "\n".join(out)


def headers_section() -> str:
    """System headers a kernel may #include (their device-side declarations)."""
    return "`#include <...>` accepts: " + _names(system_headers.HEADERS) + "."


SECTIONS = {"builtins": builtins_section, "legacy": legacy_section,
            "unsupported": unsupported_section, "headers": headers_section}


def render(text: str) -> str:
    """`text` with every generated block rewritten from the tables."""
    def sub(m: re.Match) -> str:
        name = m.group(2)
        if name not in SECTIONS:
            raise KeyError(f"unknown generated block {name!r}")
        return f"{m.group(1)}{SECTIONS[name]()}\n{m.group(4)}"
    return _BLOCK.sub(sub, text)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    text = README.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print(f"{README} is out of date: run python -m isa.reference", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
