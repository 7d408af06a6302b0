"""nan(tag) and nanf(tag): a quiet NaN whose payload the tag string gives
(CUDA Math API), as libdevice's __nv_nan and __nv_nanf read it: "0x..." hex,
"0..." octal, else decimal; a character outside the base gives payload 0, an
overflow all ones; the payload's low 51 (22) bits go under the quiet bit.
The tag must be a string literal here (the GPU parses any string at run
time; a pointer to device data is refused).
"""
from __future__ import annotations

from . import ast as A
from . import ir
from .ir import F32, F64, I32, I64

_DIGITS = "0123456789abcdef"


def _parse(text: str, base: int, limit: int):
    """(value, overflowed, invalid) of `text` in `base` as libdevice's loop."""
    value, over, bad = 0, False, False
    for ch in text:
        if value > limit:
            over = True
        d = _DIGITS.find(ch.lower()) if base == 16 else _DIGITS[:base].find(ch)
        if d < 0:
            bad = True
            continue
        value = (value * base + d) & (2**64 - 1)
    return value, over, bad


def nan_payload(tag: str) -> int:
    """The 64-bit payload libdevice derives from `tag`."""
    if tag.startswith("0") and tag[1:2] in ("x", "X"):
        value, over, bad = _parse(tag[2:].lstrip("0"), 16, 2**60 - 1)
    elif tag.startswith("0"):
        value, over, bad = _parse(tag[1:].lstrip("0"), 8, 2**61 - 1)
    else:
        value, over, bad = 0, False, False
        for ch in tag:
            if value > 1844674407370955161 or (value == 1844674407370955161 and ch > "5"):
                over = True
            if not "0" <= ch <= "9":
                bad = True
                continue
            value = (value * 10 + int(ch)) & (2**64 - 1)
    if over:
        value = 2**64 - 1
    return 0 if bad else value


def nan_bits(tag: str, t: ir.ScalarType) -> int:
    p = nan_payload(tag)
    if t == F32:
        return 0x7FC00000 | (p & 0x3FFFFF)
    return 0x7FF8000000000000 | (p & (2**52 - 1))


def lower_nan(low, name: str, e: A.CallExpr) -> ir.Expr:
    from .printf_format import string_literal
    if len(e.args) != 1:
        raise low.error(f"too {'few' if not e.args else 'many'} arguments to function '{name}' (expected 1, "
                        f"have {len(e.args)})", e.loc if not e.args else e.args[1].loc)
    t = F32 if name == "nanf" else F64
    if not isinstance(e.args[0], A.StringLit):
        low.rvalue(e.args[0])      # its own diagnostics first
        raise low.error(f"'{name}' with a tag that is not a string literal is not supported "
                        "(the payload is read at compile time)", e.args[0].loc)
    bits = nan_bits(string_literal(e.args[0].text), t)
    if t == F32:
        return ir.Intrinsic(F32, e.loc, "int_as_float", [ir.Const(I32, e.loc, bits - (1 << 32) if bits >> 31 else bits)])
    return ir.Intrinsic(F64, e.loc, "longlong_as_double", [ir.Const(I64, e.loc, bits)])
