"""How IR types look as 32-lane LLVM values and in memory."""
from __future__ import annotations

import llvmlite.ir as ll

from isa import ir

from .abi import WARP

I1, I8, I16, I32, I64 = (ll.IntType(n) for n in (1, 8, 16, 32, 64))
F32, F64 = ll.FloatType(), ll.DoubleType()
VOIDP = I8.as_pointer()
MASK_VEC = ll.VectorType(I1, WARP)


def scalar_ll(t) -> ll.Type:
    """The LLVM element type of one lane's value (registers)."""
    if isinstance(t, ir.ScalarType):
        if t.kind == "bool":
            return I1
        if t.kind == "float":
            return F32 if t.bits == 32 else F64
        return ll.IntType(t.bits)
    if isinstance(t, ir.PointerType):
        return I64
    raise TypeError(f"no register form for {t}")


def mem_ll(t) -> ll.Type:
    """The LLVM element type of one lane's value in memory (bool is a byte)."""
    if isinstance(t, ir.ScalarType) and t.kind == "bool":
        return I8
    return scalar_ll(t)


def vec(t) -> ll.VectorType:
    return ll.VectorType(scalar_ll(t), WARP)


def components(t) -> list:
    """Scalar component types of a register value (one for scalars)."""
    if isinstance(t, ir.VectorType):
        return [t.elem] * t.count
    return [t]


def slot_bytes(t) -> int:
    """Frame bytes for a 32-lane register of type t."""
    return sum(WARP * max(c.size, 1) for c in components(t))


def is_float_t(t) -> bool:
    return isinstance(t, ir.ScalarType) and t.kind == "float"


def is_signed_int(t) -> bool:
    return isinstance(t, ir.ScalarType) and t.kind == "int" and t.signed


def is_bool(t) -> bool:
    return isinstance(t, ir.ScalarType) and t.kind == "bool"


def splat(value, elem: ll.Type) -> ll.Constant:
    return ll.Constant(ll.VectorType(elem, WARP), [value] * WARP)


def _natural_align(t: ll.Type) -> int:
    if isinstance(t, ll.VectorType):
        t = t.element
    if isinstance(t, ll.ArrayType):
        return _natural_align(t.element)
    if isinstance(t, ll.IntType):
        return max(1, min(t.width // 8, 8))
    if t == F64:
        return 8
    if t == F32:
        return 4
    return 8


class AlignedBuilder(ll.IRBuilder):
    """An IRBuilder whose loads and stores state the element's alignment.

    Without it LLVM assumes a <32 x float> is 128-byte aligned and emits
    aligned vector moves, which fault on frames and buffers numpy placed
    at 16-byte boundaries."""

    def load(self, ptr, name="", align=None, typ=None):
        if align is None:
            align = _natural_align(ptr.type.pointee)
        return super().load(ptr, name=name, align=align, typ=typ)

    def store(self, value, ptr, align=None):
        if align is None:
            align = _natural_align(value.type)
        return super().store(value, ptr, align=align)
