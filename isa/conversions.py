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
    zero and saturates as cvt.rzi does, NaN -> 0; to char or short, as nvcc,
    saturates to 32 bits and keeps the low bits)."""
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
        bits = max(t.bits, 32)        # char/short: saturate to 32 bits, keep the low bits (nvcc)
        lo = -(1 << (bits - 1)) if t.signed else 0
        hi = (1 << (bits - 1)) - 1 if t.signed else (1 << bits) - 1
        if math.isinf(value):
            return wrap(hi if value > 0 else lo, t)
        return wrap(max(lo, min(hi, int(value))), t)
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
            if t.bits == 64 and longs < 2:     # C++: a 64-bit literal without 'll' is a long
                t = ir.LONG if t.signed else ir.ULONG
            return value, t
    if value >= 1 << 64:
        raise OverflowError("too large for any integer type")
    return value, U64


_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "e": 27,
            "\\": 92, "'": 39, '"': 34, "?": 63}
_OCT = "01234567"
_HEX = "0123456789abcdefABCDEF"


def _char_units(body: str) -> list:
    """The chars (bytes) of a char literal's body, escapes decoded as gcc does:
    \\ooo takes up to three octal digits, \\x every hex digit that follows; a
    value past 0xff is an error; other characters are their UTF-8 bytes."""
    units, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            units += list(c.encode("utf-8"))
            i += 1
            continue
        c = body[i + 1]
        if c in _OCT:
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in _OCT:
                j += 1
            v, what = int(body[i + 1:j], 8), "octal"
        elif c in "xX":
            j = i + 2
            while j < len(body) and body[j] in _HEX:
                j += 1
            if j == i + 2:
                raise ValueError("\\x used with no following hex digits")
            v, what = int(body[i + 2:j], 16), "hex"
        elif c in "uU":     # a universal character name: its UTF-8 bytes
            n = 4 if c == "u" else 8
            digits = body[i + 2:i + 2 + n]
            if len(digits) != n or any(d not in _HEX for d in digits) or int(digits, 16) > 0x10FFFF:
                raise ValueError(f"incomplete or invalid universal character name \\{c}{digits}")
            units += list(chr(int(digits, 16)).encode("utf-8", "surrogatepass"))
            i += 2 + n
            continue
        else:
            units.append(_ESCAPES.get(c, ord(c) & 0xFF))
            i += 2
            continue
        if v > 0xFF:
            raise ValueError(f"{what} escape sequence out of range")
        units.append(v)
        i = j
    return units


def char_literal_type(text: str) -> tuple:
    """(value, type) of a C char literal like 'a', '\\n' or 'ab'. One char has
    type char (signed on the GPU); a multi-character literal has type int and,
    as in gcc, the value of its chars' bytes in order, the last in the low
    byte, truncated to int ('abcde' == 'bcde'). Raises ValueError for an empty
    literal or an escape past 0xff (gcc: "... escape sequence out of range")."""
    units = _char_units(text[1:-1])
    if not units:
        raise ValueError("empty character constant")
    if len(units) == 1:
        return wrap(units[0], I8), I8
    value = 0
    for u in units:
        value = (value << 8) | u
    return wrap(value, I32), I32


def char_literal_value(text: str) -> int:
    """Value of a C char literal (see char_literal_type)."""
    return char_literal_type(text)[0]
