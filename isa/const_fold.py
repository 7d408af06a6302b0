"""Evaluate constant IR expressions (array sizes, case labels, enum values,
initialisers of __constant__/__device__ variables), with the GPU's results
where C leaves them open (division by zero is not constant; shifts clamp)."""
from __future__ import annotations

import math
import struct
from typing import Optional, Union

from . import ir
from .conversions import const_value, wrap

Value = Union[int, float, bool]


class NotConstant(Exception):
    pass


def fold(e: ir.Expr) -> Optional[Value]:
    """The value of `e` if it is a constant expression, else None."""
    try:
        return _fold(e)
    except NotConstant:
        return None


def _fold(e: ir.Expr) -> Value:
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Cast):
        v = _fold(e.a)
        t = e.type
        if isinstance(t, ir.ScalarType):
            return const_value(v, t)
        if isinstance(t, ir.PointerType) and v == 0:
            return 0
        raise NotConstant
    if isinstance(e, ir.Unary):
        v = _fold(e.a)
        if e.op == "neg":
            return _norm(-v, e.type)
        if e.op == "bitnot":
            return _norm(~int(v), e.type)
        if e.op == "lnot":
            return not v
    if isinstance(e, ir.Binary):
        a, b = _fold(e.a), _fold(e.b)
        t = e.a.type
        op = e.op
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b,
                    "gt": a > b, "ge": a >= b}[op]
        if op == "add":
            return _norm(a + b, t)
        if op == "sub":
            return _norm(a - b, t)
        if op == "mul":
            return _norm(a * b, t)
        if op in ("div", "rem"):
            if isinstance(t, ir.ScalarType) and t.kind == "float":
                if op == "div":
                    if b == 0:
                        raise NotConstant
                    return _norm(a / b, t)
                return _norm(math.fmod(a, b), t)
            if b == 0:
                raise NotConstant
            q = abs(int(a)) // abs(int(b))
            if (a < 0) != (b < 0):
                q = -q
            return _norm(q if op == "div" else a - q * b, t)
        if op in ("shl", "shr"):
            n = int(b)
            bits = t.bits
            if n < 0 or n >= bits:
                n = bits  # clamp as PTX's shifts do
            if op == "shl":
                return _norm(int(a) << n, t)
            return _norm(int(a) >> n, t) if n < bits else (_norm(-1, t) if t.signed and a < 0 else 0)
        if op == "and":
            return _norm(int(a) & int(b), t)
        if op == "or":
            return _norm(int(a) | int(b), t)
        if op == "xor":
            return _norm(int(a) ^ int(b), t)
    if isinstance(e, ir.Logical):
        a = _fold(e.a)
        if e.op == "and":
            return bool(a) and bool(_fold(e.b))
        return bool(a) or bool(_fold(e.b))
    if isinstance(e, ir.Cond):
        return _fold(e.a) if _fold(e.c) else _fold(e.b)
    if isinstance(e, ir.Comma):
        return _fold(e.exprs[-1])
    raise NotConstant


def _norm(v, t) -> Value:
    if isinstance(t, ir.ScalarType):
        return const_value(v, t)
    raise NotConstant


def pack(value: Value, t: ir.ScalarType) -> bytes:
    """Little-endian bytes of a scalar constant of type t."""
    if t.kind == "bool":
        return bytes([1 if value else 0])
    if t.kind == "float":
        return struct.pack("<f" if t.bits == 32 else "<d", float(value))
    v = wrap(int(value), t)
    return (v & ((1 << t.bits) - 1)).to_bytes(t.size, "little")
