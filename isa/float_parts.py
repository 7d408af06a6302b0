"""Calls of ldexp, scalbn, scalbln, frexp, modf, ilogb and logb (and their
`f` forms): the float taken apart into exponent and significand, or integral
and fractional part (CUDA Math API; computed in gpuemu/jit/float_parts.py);
and sincos, sincospi and remquo, whose second results go out through
pointers as frexp's and modf's.

Overloads as nvcc (CUDA 13, libstdc++) picks them: x of type float calls the
float overload, double the double one; an integer x reaches std's promoting
template, a constexpr host function nvcc refuses to call; modf is chosen by
its pointer (float * or double *; an integer x converts). The out-parameter
of frexp and modf is written as `*p = v` would be; `&v` of a local scalar
writes v itself, which then stays in a register, as after nvcc's inlining
(lower.py leaves such names out of its address-taken set).
"""
from __future__ import annotations

from . import ast as A
from . import builtins as B
from . import ir
from .ir import F32, F64, I32, LONG
from .places import is_arith, tname

# the functions whose second argument is an out-pointer
OUT_POINTER = frozenset(n for n, (k, _) in B.FLOAT_PARTS.items()
                        if k in ("frexp", "modf", "sincos", "sincospi", "remquo"))


def host_template_error(low, name: str, v: ir.Expr, loc):
    """nvcc's refusal of std's integer template of a math function (a
    constexpr __host__ function) called from device code."""
    caller = "__global__" if low.fn.is_kernel else "__device__"
    return low.error(f'calling a constexpr __host__ function("{name}") from a {caller} function("{low.fn.name}") '
                     f"is not allowed: '{name}' with an argument of type '{tname(v.type)}' is std::{name}'s "
                     "template for integers, a host function; convert the argument to float or double", loc)


def lower_float_part(low, name: str, e: A.CallExpr) -> ir.Expr:
    kind, fixed = B.FLOAT_PARTS[name]
    n = B.FLOAT_PART_ARITY[kind]
    if len(e.args) != n:
        few = len(e.args) < n
        raise low.error(f"too {'few' if few else 'many'} arguments to function '{name}' (expected {n}, "
                        f"have {len(e.args)})", e.loc if few else e.args[n].loc)
    loc = e.loc
    x = low.rvalue(e.args[0])
    if not is_arith(x.type):
        raise low.error(f"no matching function for call to '{name}' with argument of type '{tname(x.type)}'",
                        e.args[0].loc)
    if kind in ("sincos", "sincospi"):
        sin_at, cos_at = (_out_place(low, name, a, fixed) for a in e.args[1:])
        t = sin_at.type
        if cos_at.type != t:
            raise low.error(f'no instance of overloaded function "{name}" matches the argument list '
                            f'(arguments of types "{tname(t)} *" and "{tname(cos_at.type)} *")', e.args[2].loc)
        tmp = low.temp(t, loc)
        xv = ir.VarRef(t, loc, tmp)
        return ir.Comma(ir.VOID, loc, [ir.Assign(t, loc, tmp, low.convert(x, t, e.args[0].loc, "pass")),
                                       low.store(sin_at, ir.Intrinsic(t, loc, "sin" + kind[6:], [xv]), loc),
                                       low.store(cos_at, ir.Intrinsic(t, loc, "cos" + kind[6:], [xv]), loc)])
    if kind == "modf":
        place = _out_place(low, name, e.args[1], fixed)
        t = place.type
        x = low.convert(x, t, e.args[0].loc, "pass")
        tmp = low.temp(t, loc)
        xv = ir.VarRef(t, loc, tmp)
        return ir.Comma(t, loc, [ir.Assign(t, loc, tmp, x),
                                 low.store(place, ir.Intrinsic(t, loc, "trunc", [xv]), loc),
                                 ir.Intrinsic(t, loc, "modf", [xv])])
    if kind == "remquo":
        y = low.rvalue(e.args[1])
        if not is_arith(y.type):
            raise low.error(f"no matching function for call to '{name}' with argument of type '{tname(y.type)}'",
                            e.args[1].loc)
        t = fixed or _overload(low, name, x if x.type not in (F32, F64) or x.type != y.type else y, loc)
        place = _out_place(low, name, e.args[2], I32)
        xt, yt = low.temp(t, loc), low.temp(t, loc)
        xv, yv = ir.VarRef(t, loc, xt), ir.VarRef(t, loc, yt)
        return ir.Comma(t, loc, [ir.Assign(t, loc, xt, low.convert(x, t, e.args[0].loc, "pass")),
                                 ir.Assign(t, loc, yt, low.convert(y, t, e.args[1].loc, "pass")),
                                 low.store(place, ir.Intrinsic(I32, loc, "remquo_quo", [xv, yv]), loc),
                                 ir.Intrinsic(t, loc, "remainder", [xv, yv])])
    t = fixed or _overload(low, name, x, loc)
    x = low.convert(x, t, e.args[0].loc, "pass")
    if kind in ("ilogb", "logb"):
        return ir.Intrinsic(I32 if kind == "ilogb" else t, loc, kind, [x])
    if kind == "frexp":
        place = _out_place(low, name, e.args[1], I32)
        tmp = low.temp(t, loc)
        xv = ir.VarRef(t, loc, tmp)
        return ir.Comma(t, loc, [ir.Assign(t, loc, tmp, x),
                                 low.store(place, ir.Intrinsic(I32, loc, "frexp_exp", [xv]), loc),
                                 ir.Intrinsic(t, loc, "frexp", [xv])])
    nv = low.rvalue(e.args[1])
    if not is_arith(nv.type):
        raise low.error(f"no matching function for call to '{name}' with argument of type '{tname(nv.type)}'",
                        e.args[1].loc)
    nv = low.convert(nv, LONG if kind == "scalbln" else I32, e.args[1].loc, "pass")
    return ir.Intrinsic(t, loc, "ldexp", [x, nv])


def _overload(low, name: str, x: ir.Expr, loc) -> ir.Type:
    if x.type in (F32, F64):
        return x.type
    raise host_template_error(low, name, x, loc)


def _out_place(low, name: str, arg: A.Expr, want):
    """The object the out-pointer `arg` points to, of type `want` (float or
    double for modf when None: the pointer picks the overload)."""
    if isinstance(arg, A.UnaryOp) and arg.op == "&":
        place = low.lvalue(arg.a)
        if place.kind == "const":
            raise low.error("cannot take the address of an rvalue", arg.loc)
    else:
        t = low.type_only(arg)
        if not isinstance(t, (ir.PointerType, ir.ArrayType)):
            raise low.error(f"no matching function for call to '{name}' with argument of type '{tname(t)}'",
                            arg.loc)
        place = low.lvalue(A.UnaryOp(arg.loc, "*", arg))
    ok = (want is None and place.type in (F32, F64)) or (
        want is not None and ir.overload_identity(place.type) == ir.overload_identity(want))
    if not ok or place.const:
        got = f"{'const ' if place.const else ''}{tname(place.type)} *"
        if B.FLOAT_PARTS[name][1] is None:
            raise low.error(f'no instance of overloaded function "{name}" matches the argument list '
                            f'(argument of type "{got}")', arg.loc)
        raise low.error(f'argument of type "{got}" is incompatible with parameter of type "{tname(want)} *"',
                        arg.loc)
    low.check_assignable(place, arg.loc)
    return place

