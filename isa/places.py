"""Places and values of the lowering: LValue, qualifier tags, type tests.

Values are ir.Exprs. Pointer-typed values may carry `pq` = (pointee const,
pointee volatile) as an attribute, the front end's only extra knowledge
(the IR has no const). Places are `LValue`s: a 'reg' Var, memory at an
address (Load/Store), one member of a vector held in a 'reg' Var, or a
constant with no place (an enumerator).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import ir

_SIDE_EFFECT_INTRINSICS = ("syncthreads", "syncwarp", "threadfence", "threadfence_block",
                           "threadfence_system")


@dataclass
class LValue:
    kind: str                      # 'reg' | 'mem' | 'vecelem' | 'const'
    type: ir.Type
    loc: ir.Loc
    var: Optional[ir.Var] = None
    addr: Optional[ir.Expr] = None
    const: bool = False
    volatile: bool = False
    pq: tuple = (False, False)     # pointee quals when type is a pointer
    index: int = 0                 # vecelem: member index
    value: Optional[ir.Expr] = None  # 'const': an rvalue with no place (enum constant)
    deep: tuple = ()               # quals of the levels below the pointee (QType.deep)


def pq_of(e: ir.Expr) -> tuple:
    return getattr(e, "pq", (False, False))


def deep_of(e: ir.Expr) -> tuple:
    """The (const, volatile) pairs below a pointer value's pointee (QType.deep)."""
    return getattr(e, "deep", ())


def with_pq(e: ir.Expr, pq: tuple, deep: tuple = ()) -> ir.Expr:
    if isinstance(e.type, ir.PointerType):
        if pq != (False, False):
            e.pq = pq
        elif "pq" in vars(e):
            del e.pq
        while deep and deep[-1] == (False, False):
            deep = deep[:-1]
        if deep:
            e.deep = deep
        elif "deep" in vars(e):
            del e.deep
    return e


def below(deep: tuple) -> tuple:
    """(pq, deep) of the pointee of a pointer whose pointee has `deep` below it."""
    return (deep[0] if deep else (False, False)), deep[1:]


def is_arith(t) -> bool:
    return isinstance(t, ir.ScalarType)


def is_int(t) -> bool:
    return isinstance(t, ir.ScalarType) and t.kind in ("int", "bool")


def is_ptr(t) -> bool:
    return isinstance(t, ir.PointerType)


def tname(t) -> str:
    """A type as a C programmer spells it, for diagnostics."""
    if isinstance(t, ir.ScopedEnumType):
        return t.name
    if isinstance(t, ir.ScalarType):
        if t.spelling:
            return t.spelling
        if t.kind == "bool":
            return "bool"
        if t.kind == "float":
            return "float" if t.bits == 32 else "double"
        base = {8: "char", 16: "short", 32: "int", 64: "long long"}[t.bits]
        return base if t.signed else "unsigned " + base
    if isinstance(t, ir.PointerType):
        return tname(t.pointee) + " *"
    if isinstance(t, ir.ArrayType):
        return f"{tname(t.elem)} [{t.count if t.count is not None else ''}]"
    return str(t)


def clone(e):
    """Copy an expression tree (Vars, GlobalVars and Functions are shared)."""
    if isinstance(e, ir.Expr):
        new = object.__new__(type(e))
        for k, v in vars(e).items():
            if isinstance(v, ir.Expr):
                v = clone(v)
            elif isinstance(v, list):
                v = [clone(x) for x in v]
            setattr(new, k, v)
        return new
    return e


def has_side_effects(e) -> bool:
    if isinstance(e, (ir.Assign, ir.Store, ir.Call, ir.MemCopy)):
        return True
    if isinstance(e, ir.Intrinsic) and (e.name.startswith("atomic") or e.name in _SIDE_EFFECT_INTRINSICS):
        return True
    if isinstance(e, ir.Expr):
        for k, v in vars(e).items():
            if k in ("type", "loc"):
                continue
            if isinstance(v, ir.Expr) and has_side_effects(v):
                return True
            if isinstance(v, list) and any(isinstance(x, ir.Expr) and has_side_effects(x) for x in v):
                return True
    return False


def strip_spaces(t: ir.Type) -> ir.Type:
    """A type without its pointer address spaces (for compatibility checks)."""
    if isinstance(t, ir.PointerType):
        return ir.PointerType(strip_spaces(t.pointee))
    if isinstance(t, ir.ArrayType):
        return ir.ArrayType(strip_spaces(t.elem), t.count)
    return t


def cheap_address(addr: ir.Expr) -> bool:
    """An address that is fine to evaluate twice."""
    if isinstance(addr, (ir.VarRef, ir.AddrOf, ir.GlobalRef, ir.Const, ir.Special)):
        return True
    if isinstance(addr, ir.Cast):
        return cheap_address(addr.a)
    if isinstance(addr, ir.PtrAdd):
        return cheap_address(addr.ptr) and cheap_int(addr.offset)
    return False


def cheap_int(e: ir.Expr) -> bool:
    if isinstance(e, (ir.VarRef, ir.Const, ir.Special)):
        return True
    if isinstance(e, ir.Cast):
        return cheap_int(e.a)
    if isinstance(e, ir.Binary):
        return cheap_int(e.a) and cheap_int(e.b)
    return False
