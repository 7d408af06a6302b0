"""rcbrt on 32 lanes: 1 / cbrt(x).

CUDA Math API bound: 1 ulp (float and double). Float lanes: glibc's double
cbrt and one division, rounded once to float (0.5 ulp and a hair). Double
lanes: |x| scaled by 2^-3k (exact) into [1, 8), y = 1/cbrt there, then one
Newton step y += y (1 - x y^3) / 3 with the residual taken exactly (fma
splits y^2 and y^3), and the scale 2^-k put back. Special values: rcbrt(+-0)
is +-inf, rcbrt(+-inf) +-0, NaN NaN.
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


def _cbrt(b, m, v, used):
    used.add("cbrt")
    fn = intrinsic(m, "cbrt", _D, [_D])
    out = ll.Constant(_DV, ll.Undefined)
    for lane in range(WARP):
        idx = ll.Constant(I32, lane)
        out = b.insert_element(out, b.call(fn, [b.extract_element(v, idx)]), idx)
    return out


def rcbrt(b: ll.IRBuilder, m: ll.Module, x, libm_used: set):
    one = splat(1.0, _D)
    if x.type.element == F32:
        r = b.fdiv(one, _cbrt(b, m, b.fpext(x, _DV), libm_used))
        return b.fptrunc(r, ll.VectorType(F32, WARP))
    ax = _call(b, m, "fabs", [x])
    _, e = _exponent(b, m, ax, _Format(_D))
    k = b.sub(b.udiv(b.add(e, splat(3 * 1100, I32)), splat(3, I32)), splat(1100, I32))   # floor(e / 3)
    xs = ldexp(b, m, ax, b.mul(k, splat(-3, I32)))                                        # in [1, 8)
    y = b.fdiv(one, _cbrt(b, m, xs, libm_used))
    p = b.fmul(y, y)
    p_lo = _call(b, m, "fma", [y, y, b.fneg(p)])
    q = b.fmul(p, y)
    q_lo = _call(b, m, "fma", [p, y, b.fneg(q)])
    q_lo = _call(b, m, "fma", [p_lo, y, q_lo])                                            # y^3 = q + q_lo
    rest = b.fsub(_call(b, m, "fma", [b.fneg(xs), q, one]), b.fmul(xs, q_lo))             # 1 - x y^3
    y = _call(b, m, "fma", [b.fmul(y, rest), splat(1.0 / 3.0, _D), y])
    y = ldexp(b, m, y, b.sub(splat(0, I32), k))
    y = _call(b, m, "copysign", [y, x])
    inf = splat(float("inf"), _D)
    special = b.or_(b.fcmp_ordered("==", ax, splat(0.0, _D)), b.fcmp_ordered("==", ax, inf))
    at_special = _call(b, m, "copysign", [b.select(b.fcmp_ordered("==", ax, inf), splat(0.0, _D), inf), x])
    return b.select(special, at_special, y)
