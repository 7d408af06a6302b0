"""C's arithmetic conversion rules (C11 6.3.1), as short pure functions.

CUDA device code follows the host's LP64 data model: long is 64 bits.
"""
from __future__ import annotations

from typing import Union

from . import ir
from .ir import I8, I32, U32, I64, U64, F32, F64


def rank(t: ir.ScalarType) -> int:
    """Integer conversion rank (C11 6.3.1.1): by width; bool lowest."""
    return 0 if t.kind == "bool" else t.bits


def promote(t: ir.Type) -> ir.Type:
    """Integer promotions (C11 6.3.1.1p2): bool/char/short -> int."""
    if isinstance(t, ir.ScalarType) and t.kind in ("bool", "int") and rank(t) < 32:
        return I32
    return t


def usual_arithmetic(a: ir.ScalarType, b: ir.ScalarType) -> ir.ScalarType:
    """The common type of a binary arithmetic operation (C11 6.3.1.8)."""
    if a.kind == "float" or b.kind == "float":
        bits = max(x.bits for x in (a, b) if x.kind == "float")
        return F64 if bits == 64 else F32
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.bits >= b.bits else b
    u, s = (a, b) if not a.signed else (b, a)
    if u.bits >= s.bits:
        return u
    # signed type can hold all values of the unsigned one (wider)
    return s


def wrap(value: int, t: ir.ScalarType) -> int:
    """Wrap an integer to the range of `t` (two's complement, as the GPU)."""
    if t.kind == "bool":
        return 1 if value else 0
    bits = t.bits
    value &= (1 << bits) - 1
    if t.signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def const_value(value: Union[int, float, bool], t: ir.ScalarType) -> Union[int, float, bool]:
    """A constant converted to `t` by C's rules (float->int truncates toward
    zero and saturates as cvt.rzi does, NaN -> 0)."""
    import math
    import struct
    if t.kind == "bool":
        return bool(value)
    if t.kind == "float":
        v = float(value)
        if t.bits == 32:
            try:
                v = struct.unpack("<f", struct.pack("<f", v))[0]
            except OverflowError:
                v = math.copysign(math.inf, v)
        return v
    if isinstance(value, float):
        if math.isnan(value):
            return 0
        lo = -(1 << (t.bits - 1)) if t.signed else 0
        hi = (1 << (t.bits - 1)) - 1 if t.signed else (1 << t.bits) - 1
        if math.isinf(value):
            return hi if value > 0 else lo
        return max(lo, min(hi, int(value)))
    return wrap(int(value), t)


def int_literal_type(text: str) -> tuple:
    """(value, type) of a C integer literal (C11 6.4.4.1: the first of the
    candidate types that holds the value; decimal literals without a u suffix
    stay signed, hex/octal may become unsigned). A decimal literal that fits
    no signed candidate but fits 64 bits becomes unsigned long long, as gcc
    does ("integer constant is so large that it is unsigned"); one wider than
    64 bits fits no type and raises OverflowError (nvcc/EDG: "integer
    constant is too large")."""
    s = text
    low = s.lower()
    suffix = ""
    while low and low[-1] in "ul":
        suffix = low[-1] + suffix
        low = low[:-1]
        s = s[:-1]
    if low.startswith("0x"):
        value, decimal = int(low[2:], 16), False
    elif low.startswith("0b"):
        value, decimal = int(low[2:], 2), False
    elif len(low) > 1 and low.startswith("0"):
        value, decimal = int(low, 8), False
    else:
        value, decimal = int(low, 10), True
    unsigned = "u" in suffix
    longs = suffix.count("l")
    if unsigned:
        cands = [U32, U64] if longs == 0 else [U64]
    elif decimal:
        cands = [I32, I64] if longs == 0 else [I64]
    else:
        cands = [I32, U32, I64, U64] if longs == 0 else [I64, U64]
    for t in cands:
        lo = -(1 << (t.bits - 1)) if t.signed else 0
        hi = (1 << (t.bits - 1)) - 1 if t.signed else (1 << t.bits) - 1
        if lo <= value <= hi:
            return value, t
    if value >= 1 << 64:
        raise OverflowError("too large for any integer type")
    return value, U64


_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "a": 7, "b": 8, "f": 12, "v": 11,
            "\\": 92, "'": 39, '"': 34, "?": 63}


def char_literal_value(text: str) -> int:
    """Value of a C char literal like 'a' or '\\n' (type char, promoted)."""
    body = text[1:-1]
    if body.startswith("\\"):
        esc = body[1:]
        if esc[0] in "xX":
            return wrap(int(esc[1:], 16), I8)
        if esc[0].isdigit():
            return wrap(int(esc, 8), I8)
        return _ESCAPES.get(esc[0], ord(esc[0]))
    return wrap(ord(body[0]), I8)
