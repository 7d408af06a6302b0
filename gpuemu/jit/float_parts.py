"""ldexp, frexp, modf, ilogb and logb on 32 lanes: the float taken apart into
exponent and significand, or integral and fractional part.

The GPU computes each exactly (CUDA Math API: no error bound is listed for
them); the code below follows libdevice's __nv_ldexpf, __nv_frexpf,
__nv_modff, __nv_ilogbf, __nv_logbf and their double forms step by step
(CUDA 13.0's nvvm/libdevice/libdevice.10.bc), branches turned into selects:
with no flush to zero the results are IEEE 754's (C's ldexp, frexp, modf,
ilogb, logb), the special values the CUDA Math API lists (ilogb(0) and
ilogb(NaN) are INT_MIN, ilogb(inf) INT_MAX; frexp of 0, inf or NaN stores 0).
"""
from __future__ import annotations

import llvmlite.ir as ll

from .abi import WARP
from .c_semantics import intrinsic, vname
from .lane_types import F32, I1, I32, I64, splat

INT_MIN, INT_MAX = -2**31, 2**31 - 1


class _Format:
    """The binary format's numbers: width, significand bits, exponent bias."""

    def __init__(self, et: ll.Type):
        self.et = et
        self.w = 32 if et == F32 else 64
        self.man = 23 if et == F32 else 52
        self.bias = 127 if et == F32 else 1023
        self.it = I32 if et == F32 else I64
        self.fv = ll.VectorType(et, WARP)
        self.iv = ll.VectorType(self.it, WARP)

    def f(self, v: float):
        return splat(v, self.et)

    def i(self, v: int):
        v &= (1 << self.w) - 1
        return splat(v - (1 << self.w) if v >> (self.w - 1) else v, self.it)


def _fabs(b, m, x, fm):
    return b.call(intrinsic(m, f"llvm.fabs.{vname(fm.et)}", fm.fv, [fm.fv]), [x])


def ldexp(b: ll.IRBuilder, m: ll.Module, x, n):
    """x * 2^n rounded once: n clamped to +-(3 * 2 * bias + 32) (beyond which
    every finite x over- or underflows), then x multiplied by 2^s1 and three
    times by 2^s0, the powers chosen so that none overflows its exponent
    field and only the last product can round (libdevice's __nv_ldexpf)."""
    fm = _Format(x.type.element)
    iv32 = ll.VectorType(I32, WARP)
    bound = 278 if fm.w == 32 else 2099
    if n.type.element.width == 64:
        n = b.trunc(_clamp(b, m, n, bound, ll.VectorType(I64, WARP)), iv32)
    n = _clamp(b, m, n, bound, iv32)
    t = b.add(n, splat(4 * fm.bias, I32))
    s0 = b.lshr(t, splat(2, I32))
    s1 = b.sub(t, b.mul(s0, splat(3, I32)))
    small = b.icmp_signed("<=", _abs(b, n), splat(100 if fm.w == 32 else 216, I32))
    s0 = b.select(small, splat(fm.bias, I32), s0)
    s1 = b.select(small, b.add(n, splat(fm.bias, I32)), s1)
    p0, p1 = (_power(b, s, fm) for s in (s0, s1))
    r = b.fmul(x, p1)
    for _ in range(3):
        r = b.fmul(r, p0)
    return r


def _clamp(b, m, n, bound, t):
    w = t.element.width
    n = b.call(intrinsic(m, f"llvm.smin.v{WARP}i{w}", t, [t, t]), [n, splat(bound, t.element)])
    return b.call(intrinsic(m, f"llvm.smax.v{WARP}i{w}", t, [t, t]), [n, splat(-bound, t.element)])


def _abs(b, n):
    return b.select(b.icmp_signed("<", n, splat(0, I32)), b.sub(splat(0, I32), n), n)


def _power(b, s, fm):
    """2^(s - bias) from a biased exponent s (1..2*bias) of I32 lanes."""
    if fm.w == 64:
        s = b.zext(s, fm.iv)
    return b.bitcast(b.shl(s, fm.i(fm.man)), fm.fv)


def frexp(b: ll.IRBuilder, m: ll.Module, x):
    """(significand in [0.5, 1) with x's sign, exponent as I32 lanes):
    subnormals first scaled by 2^24 (2^54); 0, inf and NaN give x + x and 0."""
    fm = _Format(x.type.element)
    ax = _fabs(b, m, x, fm)
    shift = 24 if fm.w == 32 else 54
    small = b.fcmp_ordered("<", ax, fm.f(2.0 ** (1 - fm.bias)))
    v = b.select(small, b.fmul(x, fm.f(2.0 ** shift)), x)
    bits = b.bitcast(v, fm.iv)
    e = b.and_(b.lshr(bits, fm.i(fm.man)), fm.i(2 * fm.bias + 1))
    special = b.or_(b.fcmp_ordered("==", ax, fm.f(0.0)), b.icmp_unsigned("==", e, fm.i(2 * fm.bias + 1)))
    sign_and_fraction = fm.i(~(((1 << (fm.w - 1 - fm.man)) - 1) << fm.man) & ((1 << fm.w) - 1))
    half = fm.i((fm.bias - 1) << fm.man)
    mant = b.bitcast(b.or_(b.and_(bits, sign_and_fraction), half), fm.fv)
    expo = b.sub(b.sub(e, b.select(small, fm.i(shift), fm.i(0))), fm.i(fm.bias - 1))
    if fm.w == 64:
        expo = b.trunc(expo, ll.VectorType(I32, WARP))
    return b.select(special, b.fadd(v, v), mant), b.select(special, splat(0, I32), expo)


def modf(b: ll.IRBuilder, m: ll.Module, x):
    """(fractional part, integral part): trunc(x), and x - trunc(x) or, where
    they are equal (integers, infinities), zero with x's sign."""
    fm = _Format(x.type.element)
    t = b.call(intrinsic(m, f"llvm.trunc.{vname(fm.et)}", fm.fv, [fm.fv]), [x])
    signed_zero = b.bitcast(b.and_(b.bitcast(x, fm.iv), fm.i(1 << (fm.w - 1))), fm.fv)
    return b.select(b.fcmp_ordered("==", x, t), signed_zero, b.fsub(x, t)), t


def _exponent(b, m, x, fm):
    """(|x|'s bits, the unbiased exponent of finite nonzero x as I32 lanes;
    a subnormal's as if normalised)."""
    ab = b.bitcast(_fabs(b, m, x, fm), fm.iv)
    normal = b.sub(b.lshr(ab, fm.i(fm.man)), fm.i(fm.bias))
    lz = b.call(intrinsic(m, f"llvm.ctlz.{vname(fm.it)}", fm.iv, [fm.iv, I1]), [ab, ll.Constant(I1, 0)])
    sub = b.sub(fm.i(fm.w - fm.man - fm.bias), lz)      # (w-1-lz) + 1 - bias - man
    e = b.select(b.icmp_unsigned("<", ab, fm.i(1 << fm.man)), sub, normal)
    if fm.w == 64:
        e = b.trunc(e, ll.VectorType(I32, WARP))
    return ab, e


def ilogb(b: ll.IRBuilder, m: ll.Module, x):
    """The unbiased exponent as an int: INT_MIN for 0 and NaN, INT_MAX for inf."""
    fm = _Format(x.type.element)
    ab, e = _exponent(b, m, x, fm)
    inf = fm.i(((1 << (fm.w - 1 - fm.man)) - 1) << fm.man)
    e = b.select(b.icmp_unsigned("==", ab, inf), splat(INT_MAX, I32), e)
    bad = b.or_(b.icmp_unsigned(">", ab, inf), b.icmp_unsigned("==", ab, fm.i(0)))
    return b.select(bad, splat(INT_MIN, I32), e)


def logb(b: ll.IRBuilder, m: ll.Module, x):
    """The unbiased exponent as a float: -inf for 0, +inf for inf, NaN for NaN."""
    fm = _Format(x.type.element)
    ab, e = _exponent(b, m, x, fm)
    inf = fm.i(((1 << (fm.w - 1 - fm.man)) - 1) << fm.man)
    r = b.sitofp(e, fm.fv)
    r = b.select(b.icmp_unsigned("==", ab, fm.i(0)), fm.f(float("-inf")), r)
    return b.select(b.icmp_unsigned(">=", ab, inf), b.fmul(x, x), r)
