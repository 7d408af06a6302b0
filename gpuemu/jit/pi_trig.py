"""sinpi and cospi on 32 lanes: sin(pi x) and cos(pi x) without pi's
rounding error.

As libdevice's __nv_sinpif and __nv_cospif (CUDA 13.0): n = round(2x), the
exact rest r = x - n/2 in [-1/4, 1/4] and the quadrant n mod 4 pick
+-sin(pi r) or +-cos(pi r), a negation being 0 - v (so cospi of a
half-integer is +0); sinpi of an integer is x * 0 (+-0 with x's sign, NaN
for inf); cospi of |x| past 2^24 (2^53 for double), an even integer, is
cospi(+-0) = 1. sin and cos of pi r are taken in double from pi r held as a
double-double (pi_hi r + the product's exact error + pi_lo r), then
corrected by its low part: within about 0.5 ulp for float lanes (CUDA: 1)
and 1 ulp for double (CUDA: 2), glibc's sin and cos being within 1 ulp.
"""
from __future__ import annotations

import math

import llvmlite.ir as ll

from .abi import WARP
from .c_semantics import intrinsic, vname
from .lane_types import F32, I32, I64, splat

_D = ll.DoubleType()
_DV = ll.VectorType(_D, WARP)
_PI_HI = math.pi
_PI_LO = 1.2246467991473532e-16          # pi - _PI_HI, to double precision


def _call(b, m, name, vals):
    return b.call(intrinsic(m, f"llvm.{name}.{vname(_D)}", _DV, [_DV] * len(vals)), vals)


def _libm(b, m, name, v, used):
    used.add(name)
    fn = intrinsic(m, name, _D, [_D])
    out = ll.Constant(_DV, ll.Undefined)
    for lane in range(WARP):
        idx = ll.Constant(I32, lane)
        out = b.insert_element(out, b.call(fn, [b.extract_element(v, idx)]), idx)
    return out


def pi_trig(b: ll.IRBuilder, m: ll.Module, x, cosine: bool, libm_used: set):
    et = x.type.element
    t = b.fpext(x, _DV) if et == F32 else x
    if cosine:
        past = b.fcmp_ordered(">", _call(b, m, "fabs", [t]), splat(2.0 ** (24 if et == F32 else 53), _D))
        t = b.select(past, b.fmul(t, splat(0.0, _D)), t)
    n = _call(b, m, "round", [b.fadd(t, t)])
    r = _call(b, m, "fma", [b.fneg(n), splat(0.5, _D), t])
    integer = b.fcmp_ordered("==", t, _call(b, m, "trunc", [t]))
    safe_n = b.select(b.fcmp_ordered("<", _call(b, m, "fabs", [n]), splat(2.0 ** 62, _D)), n, splat(0.0, _D))
    q = b.fptosi(safe_n, ll.VectorType(I64, WARP))
    if cosine:
        q = b.add(q, splat(1, I64))
    p = b.fmul(splat(_PI_HI, _D), r)
    p_lo = b.fadd(_call(b, m, "fma", [splat(_PI_HI, _D), r, b.fneg(p)]), b.fmul(splat(_PI_LO, _D), r))
    sp, cp = _libm(b, m, "sin", p, libm_used), _libm(b, m, "cos", p, libm_used)
    s = _call(b, m, "fma", [cp, p_lo, sp])
    c = _call(b, m, "fma", [b.fneg(sp), p_lo, cp])
    odd = b.trunc(q, ll.VectorType(ll.IntType(1), WARP))
    v = b.select(odd, c, s)
    neg = b.icmp_unsigned("!=", b.and_(q, splat(2, I64)), splat(0, I64))
    v = b.select(neg, b.fsub(splat(0.0, _D), v), v)
    if et == F32:
        v = b.fptrunc(v, x.type)
    if not cosine:
        v = b.select(integer, b.fmul(x, splat(0.0, et)), v)
    return v
