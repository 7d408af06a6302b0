"""C operators on 32-lane LLVM vectors, with the GPU's answer where C has none.

No operation here can produce LLVM poison or undefined behaviour:
- shifts clamp the count as PTX's shl/shr do (PTX ISA, "Integer Arithmetic
  Instructions: shl, shr"): a count >= the width gives 0, or the sign fill
  for an arithmetic right shift; the count is read as unsigned;
- integer division by zero gives all ones (-1 signed, 0xff..ff unsigned)
  and remainder by zero gives the dividend (what PTX div/rem give on
  sm_90); INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0;
- float -> int conversions saturate and map NaN to 0, as cvt.rzi does
  (llvm.fptosi.sat / llvm.fptoui.sat); to char or short they saturate to
  32 bits and keep the low bits, as nvcc's cvt.rzi.s32 + cvt.s8 do;
- no fast-math flags and no FMA contraction (the H100 ground truth was
  built with --fmad=false).
"""
from __future__ import annotations

import llvmlite.ir as ll

from isa import ir

from .abi import WARP
from .lane_types import F32, I32, I64, is_bool, is_float_t, scalar_ll, splat


def intrinsic(module: ll.Module, name: str, ret: ll.Type, args: list) -> ll.Function:
    """Declare (once) and return an LLVM intrinsic or external function."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ll.Function(module, ll.FunctionType(ret, args), name)
    return fn


def vector_reduce(b: ll.IRBuilder, op: str, v: ll.Value) -> ll.Value:
    """llvm.vector.reduce.OP ('or', 'umin', 'smax', ...) of an integer vector v:
    one value of its element type (declared once per module)."""
    t = v.type
    fn = intrinsic(b.module, f"llvm.vector.reduce.{op}.v{t.count}i{t.element.width}", t.element, [t])
    return b.call(fn, [v])


def vname(t: ll.Type) -> str:
    """LLVM's overload suffix for a 32-lane vector of t (v32f32, v32i64)."""
    if isinstance(t, ll.IntType):
        return f"v{WARP}i{t.width}"
    return f"v{WARP}f32" if t == F32 else f"v{WARP}f64"


def _const(t: ll.Type, v) -> ll.Constant:
    return splat(v, t)


def int_binary(b: ll.IRBuilder, op: str, x, y, t: ir.ScalarType):
    et = scalar_ll(t)
    signed = t.signed
    w = t.bits
    if op == "add":
        return b.add(x, y)
    if op == "sub":
        return b.sub(x, y)
    if op == "mul":
        return b.mul(x, y)
    if op in ("div", "rem"):
        zero = b.icmp_unsigned("==", y, _const(et, 0))
        safe = y
        if signed:
            ovf = b.and_(b.icmp_signed("==", x, _const(et, -(1 << (w - 1)))),
                         b.icmp_signed("==", y, _const(et, -1)))
            safe = b.select(b.or_(zero, ovf), _const(et, 1), y)
        else:
            safe = b.select(zero, _const(et, 1), y)
        if op == "div":
            q = b.sdiv(x, safe) if signed else b.udiv(x, safe)
            # x / 1 already gives INT_MIN for the overflow case
            return b.select(zero, _const(et, -1 if signed else (1 << w) - 1), q)
        r = b.srem(x, safe) if signed else b.urem(x, safe)
        return b.select(zero, x, r)
    if op == "and":
        return b.and_(x, y)
    if op == "or":
        return b.or_(x, y)
    if op == "xor":
        return b.xor(x, y)
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        c = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
        return b.icmp_signed(c, x, y) if signed else b.icmp_unsigned(c, x, y)
    raise NotImplementedError(op)


def shift(b: ll.IRBuilder, op: str, x, y, t: ir.ScalarType, count_t: ir.ScalarType):
    """x << y or x >> y with PTX's clamping of the count (read as unsigned)."""
    et = scalar_ll(t)
    w = t.bits
    y64 = y if y.type.element.width == 64 else b.zext(y, ll.VectorType(I64, WARP))
    big = b.icmp_unsigned(">=", y64, splat(w, I64))
    cnt = b.trunc(y64, x.type) if w < 64 else y64
    if op == "shl":
        return b.select(big, _const(et, 0), b.shl(x, b.select(big, _const(et, 0), cnt)))
    if t.signed:
        return b.ashr(x, b.select(big, _const(et, w - 1), cnt))
    return b.select(big, _const(et, 0), b.lshr(x, b.select(big, _const(et, 0), cnt)))


def float_binary(b: ll.IRBuilder, op: str, x, y):
    if op == "add":
        return b.fadd(x, y)
    if op == "sub":
        return b.fsub(x, y)
    if op == "mul":
        return b.fmul(x, y)
    if op == "div":
        return b.fdiv(x, y)
    if op == "rem":
        return b.frem(x, y)
    if op == "ne":
        return b.fcmp_unordered("!=", x, y)
    c = {"eq": "==", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
    return b.fcmp_ordered(c, x, y)


def bool_binary(b: ll.IRBuilder, op: str, x, y):
    if op in ("and",):
        return b.and_(x, y)
    if op in ("or",):
        return b.or_(x, y)
    if op in ("xor", "ne"):
        return b.xor(x, y)
    if op == "eq":
        return b.not_(b.xor(x, y))
    # bool < bool etc. compare as 0/1
    c = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
    return b.icmp_unsigned(c, x, y)


def cast(b: ll.IRBuilder, module: ll.Module, v, src, dst):
    """Convert a lane vector from IR type src to dst (C rules, GPU saturation)."""
    if isinstance(src, ir.PointerType):
        src = ir.U64
    if isinstance(dst, ir.PointerType):
        # int -> pointer: extend by the int's signedness, keep the bits
        if src == ir.U64 or src == ir.I64:
            return v
        dst = ir.I64 if getattr(src, "signed", False) else ir.U64
        return cast(b, module, v, src, dst)
    if src == dst:
        return v
    st, dt = scalar_ll(src), scalar_ll(dst)
    vt = lambda e: ll.VectorType(e, WARP)  # noqa: E731
    if is_bool(dst):
        if is_float_t(src):
            return b.fcmp_unordered("!=", v, splat(0.0, st))
        return b.icmp_unsigned("!=", v, splat(0, st))
    if is_bool(src):
        if is_float_t(dst):
            return b.uitofp(v, vt(dt))
        return b.zext(v, vt(dt))
    if is_float_t(src) and is_float_t(dst):
        return b.fpext(v, vt(dt)) if dst.bits > src.bits else b.fptrunc(v, vt(dt))
    if is_float_t(src):
        # to char or short: cvt.rzi.s32 / .u32 (saturating to 32 bits), then
        # the low bits, as nvcc -arch=sm_90 emits: (char)300.0f is 44, not 127
        wt = dt if dst.bits >= 32 else I32
        kind = "fptosi" if dst.signed else "fptoui"
        fn = intrinsic(module, f"llvm.{kind}.sat.{vname(wt)}.{vname(st)}", vt(wt), [vt(st)])
        r = b.call(fn, [v])
        return r if wt == dt else b.trunc(r, vt(dt))
    if is_float_t(dst):
        return b.sitofp(v, vt(dt)) if src.signed else b.uitofp(v, vt(dt))
    if dst.bits < src.bits:
        return b.trunc(v, vt(dt))
    if dst.bits > src.bits:
        return b.sext(v, vt(dt)) if src.signed else b.zext(v, vt(dt))
    return v


def unary(b: ll.IRBuilder, op: str, v, t):
    if op == "lnot":
        return b.not_(v)
    if op == "bitnot":
        return b.not_(v)
    if op == "neg":
        if is_float_t(t):
            return b.fneg(v)
        return b.neg(v)
    raise NotImplementedError(op)


__all__ = ["intrinsic", "vname", "int_binary", "shift", "float_binary", "bool_binary",
           "cast", "unary"]
