"""norm3d, norm4d, rnorm3d, rnorm4d and rhypot on 32 lanes: sqrt(a^2 + b^2 +
...) and its reciprocal, without overflow or underflow on the way.

CUDA Math API bounds: 2 ulp for each (float and double). Float lanes are
summed in double, where the squares are exact and the sum loses less than
2^-50: one rounding to float then leaves 0.5 ulp and a hair. Double lanes
are scaled by a power of two (exact) so that the largest |x| is in [1, 2),
squared exactly (fma: x*x = h + l), summed in double-double (TwoSum), and
the square root and its reciprocal corrected by one Newton step on the
exact residual (fma): within about 0.5 ulp before the scale is undone.
An infinite argument gives +inf (the reciprocal +0) even beside a NaN, as
hypot does; all zeros give 0 (reciprocal +inf); a NaN otherwise propagates.
"""
from __future__ import annotations

import llvmlite.ir as ll

from .abi import WARP
from .c_semantics import intrinsic, vname
from .float_parts import _exponent, _Format, ldexp
from .lane_types import F32, I32, splat

_D = ll.DoubleType()
_DV = ll.VectorType(_D, WARP)


def _call(b, m, name, vals):
    return b.call(intrinsic(m, f"llvm.{name}.{vname(_D)}", _DV, [_DV] * len(vals)), vals)


def norm(b: ll.IRBuilder, m: ll.Module, vals: list, reciprocal: bool):
    et = vals[0].type.element
    absolute = [_call(b, m, "fabs", [v]) for v in (vals if et != F32 else [b.fpext(v, _DV) for v in vals])]
    any_inf = b.fcmp_ordered("==", absolute[0], splat(float("inf"), _D))
    for a in absolute[1:]:
        any_inf = b.or_(any_inf, b.fcmp_ordered("==", a, splat(float("inf"), _D)))
    if et == F32:
        s = None
        for a in absolute:
            s = b.fmul(a, a) if s is None else b.fadd(s, b.fmul(a, a))
        r = _call(b, m, "sqrt", [s])
        if reciprocal:
            r = b.fdiv(splat(1.0, _D), r)
        r = b.select(any_inf, splat(0.0 if reciprocal else float("inf"), _D), r)
        return b.fptrunc(r, ll.VectorType(F32, WARP))
    big = absolute[0]
    for a in absolute[1:]:
        big = b.select(b.fcmp_ordered(">", a, big), a, big)
    _, e = _exponent(b, m, big, _Format(_D))
    down = b.sub(splat(0, I32), e)
    scaled = [ldexp(b, m, a, down) for a in absolute]
    hi, lo = None, None
    for x in scaled:
        h = b.fmul(x, x)
        l_ = _call(b, m, "fma", [x, x, b.fneg(h)])
        if hi is None:
            hi, lo = h, l_
            continue
        s = b.fadd(hi, h)                                   # TwoSum: hi + h = s + err exactly
        hv = b.fsub(s, hi)
        err = b.fadd(b.fsub(hi, b.fsub(s, hv)), b.fsub(h, hv))
        hi, lo = s, b.fadd(lo, b.fadd(err, l_))
    r = _call(b, m, "sqrt", [hi])
    rest = b.fadd(_call(b, m, "fma", [b.fneg(r), r, hi]), lo)        # s - r^2
    r_lo = b.fdiv(rest, b.fmul(splat(2.0, _D), r))                    # sqrt(s) = r + r_lo
    if reciprocal:
        q = b.fdiv(splat(1.0, _D), r)
        eq = _call(b, m, "fma", [b.fneg(q), r, splat(1.0, _D)])      # 1 - q r, exact
        y = _call(b, m, "fma", [q, b.fsub(eq, b.fmul(q, r_lo)), q])  # 1 / (r + r_lo)
        y = ldexp(b, m, y, down)
        special = (splat(0.0, _D), splat(float("inf"), _D))
    else:
        y = ldexp(b, m, b.fadd(r, r_lo), e)
        special = (splat(float("inf"), _D), splat(0.0, _D))
    zero = b.fcmp_ordered("==", absolute[0], splat(0.0, _D))
    for a in absolute[1:]:
        zero = b.and_(zero, b.fcmp_ordered("==", a, splat(0.0, _D)))
    return b.select(any_inf, special[0], b.select(zero, special[1], y))
