"""Calls of lrint, llrint, lround and llround (and their `f` forms): a float
rounded to a long or long long (CUDA Math API), as nvcc compiles them for
sm_90 (nvcc -ptx): lrint is cvt.rni.s64 (saturating, NaN gives 0); lround of
a double adds +-0.5 rounded toward zero, truncates and converts (so rounds
half away from zero; NaN gives 0); lroundf (and lround of a float) tests NaN
first and gives LLONG_MIN for it (libdevice's __nv_llroundf), saturating
past +-2^63 as the cast does.
"""
from __future__ import annotations

from . import ast as A
from . import ir
from .ir import F32, F64, I64, LONG
from .places import is_arith, tname

# name -> (rounding intrinsic, result type, fixed argument type or None)
ROUNDING = {}
for _n, _r in (("lrint", "rint"), ("lround", "round")):
    for _p, _t in (("", LONG), ("l", I64)):
        ROUNDING[_p + _n] = (_r, _t, None)
        ROUNDING[_p + _n + "f"] = (_r, _t, F32)


def lower_integer_rounding(low, name: str, e: A.CallExpr) -> ir.Expr:
    from .float_parts import host_template_error
    rnd, rt, fixed = ROUNDING[name]
    if len(e.args) != 1:
        raise low.error(f"too {'few' if not e.args else 'many'} arguments to function '{name}' (expected 1, "
                        f"have {len(e.args)})", e.loc if not e.args else e.args[1].loc)
    loc = e.loc
    x = low.rvalue(e.args[0])
    if not is_arith(x.type):
        raise low.error(f"no matching function for call to '{name}' with argument of type '{tname(x.type)}'",
                        e.args[0].loc)
    if fixed is None and x.type not in (F32, F64):
        raise host_template_error(low, name, x, loc)
    t = fixed or x.type
    x = low.convert(x, t, e.args[0].loc, "pass")
    if not (rnd == "round" and t == F32):
        return ir.Cast(rt, loc, ir.Intrinsic(t, loc, rnd, [x]))
    tmp = low.temp(t, loc)
    xv = ir.VarRef(t, loc, tmp)
    return ir.Comma(rt, loc, [ir.Assign(t, loc, tmp, x),
                              ir.Cond(rt, loc, ir.Intrinsic(ir.BOOL, loc, "isnan", [xv]), ir.Const(rt, loc, -2**63),
                                      ir.Cast(rt, loc, ir.Intrinsic(t, loc, "round", [xv])))])
