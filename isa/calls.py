"""Calls: __device__ functions (ir.Call) and CUDA built-ins (ir.Intrinsic etc.).

Argument conversions follow the built-in's CUDA signature (builtins.py); the
math functions are the C++ overloads of the CUDA Math API (float argument ->
float version, integer argument -> double version).
"""
from __future__ import annotations

import math

from . import ast as A
from . import ir
from .ir import BOOL, I32, U32, I64, U64, F32, F64
from . import builtins as B
from .conversions import usual_arithmetic, promote
from .conversion_functions import conversion_value, operand_value
from .places import is_arith, is_int, is_ptr, tname, with_pq, pq_of, LValue
from .texture_fetch import FETCHES, lower_texture_fetch


def lower_call(low, e: A.CallExpr, want_place: bool = False):
    """The call's value; with `want_place`, a struct-returning device call
    gives an LValue of its result temporary instead."""
    if isinstance(e.func, A.Member):
        key = _member_function(low, e.func)
        if key is not None:
            m = e.func
            this = m.a if m.arrow else A.UnaryOp(m.loc, "&", m.a)
            call = A.CallExpr(e.loc, e.func, [this] + list(e.args))
            return _device_call(low, resolve(low, key, call.args, e.loc, hidden=1), call, want_place)
        from .cooperative_groups import method_call
        return method_call(low, e)
    if isinstance(e.func, A.Lambda):
        raise low.error("lambdas are not supported (only as the operator of cg::reduce or a cg scan)", e.func.loc)
    if not isinstance(e.func, A.Name):
        raise low.error("calls through function pointers are not supported", e.loc)
    name = e.func.name
    if name.startswith("cg::"):
        from .cooperative_groups import cg_call
        return cg_call(low, e)
    sym = low.lookup(name)
    tps = low.ck.templates
    if (sym is None or (sym.kind == "func" and e.func.targs is not None)) and tps is not None \
            and name in tps.defs and not (sym is None and e.func.targs is None and _built_in_exact(low, name, e.args)):
        if low.const_only:
            raise low.error("a function call is not a constant expression", e.loc)
        if tps.defs[name].overloads:       # function templates of one name: the best of them
            return _device_call(low, resolve(low, name, e.args, e.loc, e.func), e, want_place)
        return _device_call(low, tps.for_call(low, e.func, e.args, e.loc), e, want_place)
    if sym is not None and sym.kind == "func" and e.func.targs is None:
        info = resolve(low, name, e.args, e.loc, e.func)
        if low.const_only and info.constexpr:
            from .constexpr_eval import constexpr_call
            return constexpr_call(low, info, e)
        return _device_call(low, info, e, want_place)
    if sym is None and name in FETCHES:
        return lower_texture_fetch(low, e)
    if e.func.targs is not None:
        raise low.error(f"'{name}' is not a function template", e.func.loc)
    st = low.method_struct()
    if sym is None and st is not None and f"{st.name}::{name}" in low.ck.overloads:
        # a member function calling another: this->name(...)
        call = A.CallExpr(e.loc, e.func, [A.Name(e.loc, "this")] + list(e.args))
        return _device_call(low, resolve(low, f"{st.name}::{name}", call.args, e.loc, hidden=1), call,
                            want_place)
    if sym is not None and sym.kind in ("var", "global"):
        raise low.error(f"called object '{name}' is not a function", e.loc)
    if sym is None and name in low.ck.overloads and (_class_argument(low, e.args) or
                                                     B.arity_apart(name, len(e.args), len(e.args))):
        # the user's overloads of a built-in name (helper_math.h's fminf(float2, float2),
        # make_float2(float)): they take a struct or vector, or a number of arguments, which
        # no built-in does (typecheck.declare_function)
        return _device_call(low, resolve(low, name, e.args, e.loc, e.func), e, want_place)
    if low.const_only:
        if name in ("__builtin_inff", "__builtin_inf", "__builtin_nanf", "__builtin_nan"):
            pass
        else:
            raise low.error("a function call is not a constant expression", e.loc)
    return _builtin(low, name, e)


def resolve(low, key: str, args: list, loc, name: A.Name = None, hidden: int = 0):
    """The FuncInfo a call of `key` ('f', 'S::f') with `args` calls: the one
    function of that name, or the best of its overloads and of a function
    template of the same name (`name`, the callee as written, deduces it)."""
    from .overloads import Candidate, choose, params_of, template_candidate
    tps = low.ck.templates
    tds = tps.overload_set(key) if tps is not None and name is not None else []
    # f<int>(x) names only templates
    infos = low.ck.overloads.get(key, []) if name is None or name.targs is None else []
    if len(infos) == 1 and not tds:
        return infos[0]
    cands = [Candidate(i, params_of(i)) for i in infos]
    for td in tds:
        c = template_candidate(low, tps, td, name, args, loc)
        if c is not None:
            cands.append(c)
    best = choose(low, key, cands, args, loc, hidden)
    if best.template is not None:
        return tps.instantiate(best.template[0], best.template[1], loc)
    return best.info


def _built_in_exact(low, name: str, args: list) -> bool:
    """Whether a built-in of `name` takes `args` each as its own type: as a
    non-template it then beats a user's function template of that name
    (template <class T> T max(T, T) beside CUDA's max(int, int))."""
    from .overloads import describe
    sigs = B.exact_signatures(name)
    if not sigs:
        return False
    got = tuple(ir.overload_identity(describe(low, a).type) for a in args)
    return any(tuple(ir.overload_identity(t) for t in sig) == got for sig in sigs)


def _class_argument(low, args: list) -> bool:
    from .overloads import describe
    from .places import strip_spaces
    return any(isinstance(strip_spaces(describe(low, a).type), (ir.StructType, ir.VectorType)) for a in args)


def _device_call(low, info, e: A.CallExpr, want_place: bool = False):
    fn = info.fn
    if fn.body is None and low.ck.templates is not None:    # a class template's member, first called
        low.ck.templates.classes.ensure_lowered(info, e.loc)
    if low.const_only:
        raise low.error("a function call is not a constant expression", e.loc)
    caller = low.info
    if info.space == "global":
        raise low.error(f"a __global__ function ('{fn.name}') cannot be called from device code "
                        "(dynamic parallelism is not supported)", e.loc)
    if info.space == "host":
        where = "__global__" if caller.space == "global" else "__device__"
        raise low.error(f"calling a __host__ function ('{fn.name}') from a {where} function is not allowed",
                        e.loc)
    params = fn.params[:len(info.params_q)]
    call_args = list(e.args)
    while len(call_args) < len(params) and info.defaults[len(call_args)] is not None:
        call_args.append(info.defaults[len(call_args)])
    e = A.CallExpr(e.loc, e.func, call_args)
    if len(e.args) < len(params):
        raise low.error(f"too few arguments to function '{fn.name}' (expected {len(params)}, have {len(e.args)})",
                        e.loc)
    if len(e.args) > len(params):
        raise low.error(f"too many arguments to function '{fn.name}' (expected {len(params)}, have {len(e.args)})",
                        e.args[len(params)].loc)
    args = []
    for a, p, pq, byref, ref in zip(e.args, params, info.params_q, info.byref, info.refs):
        if ref:
            args.append(_reference(low, a, p, pq))
            continue
        if byref:
            st = pq.type
            tmp = low.temp(st, a.loc, "local")
            dst = ir.AddrOf(ir.PointerType(st, "local"), a.loc, tmp)
            copy = low.struct_copy(dst, a, st, a.loc)
            args.append(ir.Comma(dst.type, a.loc, [copy, ir.AddrOf(dst.type, a.loc, tmp)]))
            continue
        if isinstance(p.type, ir.StructType):   # only kernels take structs by value
            raise low.error("cannot pass a struct here", a.loc)
        v = conversion_value(low, a, p.type, pq.pconst)
        v = low.convert(low.rvalue(a) if v is None else v, p.type, a.loc, "pass")
        if is_ptr(p.type) and pq_of(v)[0] and not pq.pconst:
            raise low.error(f"cannot pass a pointer to const as '{tname(p.type)}' (parameter '{p.name}')", a.loc)
        args.append(v)
    if info.sret is not None:
        st = info.sret
        tmp = low.temp(st, e.loc, "local")
        pt = ir.PointerType(st, "local")
        call = ir.Call(ir.VOID, e.loc, fn, args + [ir.AddrOf(pt, e.loc, tmp)])
        place = LValue("mem", st, e.loc, addr=ir.Comma(pt, e.loc, [call, ir.AddrOf(pt, e.loc, tmp)]))
        place.temporary = True      # an rvalue, though it has a place (overloads.py)
        if want_place:
            return place
        raise low.error(f"a struct result of '{fn.name}' must be assigned, passed or used with '.'", e.loc)
    r = ir.Call(fn.ret, e.loc, fn, args)
    q = info.ret_q
    if info.ret_ref:      # T &f(): the call is the place its result refers to
        place = LValue("mem", q.type, e.loc, addr=r, const=q.const, volatile=q.volatile,
                       pq=(q.pconst, q.pvolatile), deep=q.deep)
        return place if want_place else low.load(place)
    return with_pq(r, (q.pconst, q.pvolatile), q.deep)


def _member_function(low, m: A.Member):
    """The name ('S::f') of the member functions `obj.f` / `ptr->f` when obj is a
    struct with member f."""
    from .diagnostics import CompileError
    saved = len(low.temps)
    try:
        if isinstance(m.a, A.CallExpr) and not m.arrow:   # f().g(): the struct result's place
            t = low.lvalue(m.a).type
        else:
            t = low.type_only(m.a)
    except CompileError:
        return None
    finally:
        del low.temps[saved:]
    if m.arrow and isinstance(t, ir.PointerType):
        t = t.pointee
    if not isinstance(t, ir.StructType):
        return None
    if f"{t.name}::{m.name}" not in low.ck.overloads:
        raise low.error(f"no member function named '{m.name}' in '{t}'", m.loc)
    return f"{t.name}::{m.name}"


def _reference(low, a: A.Expr, p: ir.Var, pq) -> ir.Expr:
    """The address a reference parameter binds to (the argument must be a place)."""
    addr, _ = low.bind_reference(a, p.type.pointee, pq.const, f"the reference parameter '{p.name}'")
    if addr.type != p.type:
        addr = ir.Cast(p.type, a.loc, addr)
    return addr


def _args(low, e, n_min, n_max=None):
    n_max = n_min if n_max is None else n_max
    n = len(e.args)
    name = e.func.name
    if n < n_min:
        raise low.error(f"too few arguments to function '{name}' (expected {n_min}, have {n})", e.loc)
    if n > n_max:
        raise low.error(f"too many arguments to function '{name}' (expected {n_max}, have {n})", e.args[n_max].loc)
    return [operand_value(low, a) for a in e.args]


def _conv(low, v, t, loc):
    if not (is_arith(v.type) or (is_ptr(v.type) and is_ptr(t))):
        raise low.error(f"cannot convert '{tname(v.type)}' to '{tname(t)}'", loc)
    return low.convert(v, t, loc, "pass")


def _intr(t, loc, name, args) -> ir.Intrinsic:
    return ir.Intrinsic(t, loc, name, args)


def _float_type_of(low, v, loc, name):
    """The C++ overload picked for a math function: float stays float,
    double and integers give double."""
    if not is_arith(v.type):
        raise low.error(f"no matching function for call to '{name}' with argument of type '{tname(v.type)}'", loc)
    return F32 if v.type == F32 else F64


def _math_overload(low, name: str, a: list, e: A.CallExpr) -> ir.Type:
    """The float or double overload nvcc (CUDA 13, g++'s libstdc++) calls for
    an overloaded math function. Only float and double overloads are
    __device__; integer or mixed arguments reach std's promoting templates,
    which are constexpr host functions, except pow's, which CUDA declares
    __device__ (promoting float with an integer to double, like std::pow),
    and copysign(float, double), which gives double. CUDA's own functions
    (exp10, rsqrt, erfinv, j0, ...) have no template: an integer is
    ambiguous between float and double."""
    kinds = {x.type for x in a}
    if kinds <= {F32, F64} and (len(kinds) == 1 or name == "copysign"):
        return F64 if F64 in kinds else F32
    if name == "pow":
        return F32 if kinds == {F32} else F64
    types = " and ".join(f"'{tname(x.type)}'" for x in a)
    if name in B.NO_STD_TEMPLATE:
        raise low.error(f"call to '{name}' with argument of type {types} is ambiguous "
                        f"(float or double); convert it", e.loc)
    if all(is_int(x.type) for x in a):
        raise low.error(f"'{name}' with integer arguments calls a host function (std::{name}'s "
                        f"constexpr template); convert to float or double (e.g. {name}f((float)x))", e.loc)
    raise low.error(f"'{name}' with arguments of types {types} calls a host function (std::{name}'s "
                    f"constexpr template); convert them to one of float or double", e.loc)


def _builtin(low, name: str, e: A.CallExpr) -> ir.Expr:
    loc = e.loc
    if name in B.LEGACY:
        raise low.error(f"'{name}' was removed in CUDA 9 for sm_70+; use '{B.LEGACY[name]}' with a mask", loc)
    if name == "printf":
        return _printf(low, e)
    if name == "assert":
        a = _args(low, e, 1)
        text = ir.Const(I64, loc, low.ck.string_id(_argument_text(low, e)))
        return _intr(ir.VOID, loc, "assert", [low.to_bool(a[0], e.args[0].loc), text])
    if name in B.FENCES:
        _args(low, e, 0)
        return _intr(ir.VOID, loc, B.FENCES[name], [])
    if name == "__syncwarp":
        a = _args(low, e, 0, 1)
        mask = _conv(low, a[0], U32, e.args[0].loc) if a else ir.Const(U32, loc, 0xFFFFFFFF)
        return _intr(ir.VOID, loc, "syncwarp", [mask])
    if name in ("__syncthreads_count", "__syncthreads_and", "__syncthreads_or"):
        raise low.error(f"'{name}' is not supported", loc)
    if name == "__activemask":
        _args(low, e, 0)
        return _intr(U32, loc, "activemask", [])
    if name in B.FLOAT_PARTS:
        from .float_parts import lower_float_part
        return lower_float_part(low, name, e)
    if name in ("nan", "nanf"):
        from .nan_tag import lower_nan
        return lower_nan(low, name, e)
    if name in B.ROUND_TO_INTEGER:
        from .integer_rounding import lower_integer_rounding
        return lower_integer_rounding(low, name, e)
    if name in B.UNSUPPORTED_MATH:
        raise low.error(f"the math function '{name}' is not supported", loc)
    if name in B.INTEGER_ORDER:
        iname, fixed = B.INTEGER_ORDER[name]
        n, x = _args(low, e, 2)
        for v, av in ((n, e.args[0]), (x, e.args[1])):
            if not is_arith(v.type):
                raise low.error(f"no matching function for call to '{name}' with argument of type "
                                f"'{tname(v.type)}'", av.loc)
        t = fixed or _math_overload(low, iname, [x], e)
        return _intr(t, loc, iname, [_conv(low, n, I32, e.args[0].loc), _conv(low, x, t, e.args[1].loc)])
    if name in B.SHUFFLES:
        kind = B.SHUFFLES[name]
        a = _args(low, e, 3, 4)
        mask = _conv(low, a[0], U32, e.args[0].loc)
        v = a[1]
        if not is_arith(v.type):
            raise low.error(f"'{name}' needs a scalar value, not '{tname(v.type)}'", e.args[1].loc)
        t = promote(v.type) if v.type.kind in ("int", "bool") else v.type
        v = low.convert(v, t, e.args[1].loc)
        third = _conv(low, a[2], B.SHUFFLE_ARG3[kind], e.args[2].loc)
        width = _conv(low, a[3], I32, e.args[3].loc) if len(a) > 3 else ir.Const(I32, loc, 32)
        return _intr(t, loc, kind, [mask, v, third, width])
    if name in B.VOTES:
        kind, rt = B.VOTES[name]
        a = _args(low, e, 2)
        mask = _conv(low, a[0], U32, e.args[0].loc)
        pred = low.to_bool(a[1], e.args[1].loc)
        return _intr(rt, loc, kind, [mask, pred])
    if name in B.ATOMICS:
        return _atomic(low, B.ATOMICS[name], e)
    if name in B.LOADS:
        a = _args(low, e, 1)
        p = a[0]
        if not is_ptr(p.type) or isinstance(p.type.pointee, (ir.VoidType, ir.StructType, ir.ArrayType)):
            raise low.error(f"'{name}' needs a pointer to a scalar or vector type", e.args[0].loc)
        return ir.Load(p.type.pointee, loc, p, readonly=name == "__ldg")
    if name in B.STORES:
        a = _args(low, e, 2)
        p = a[0]
        if not is_ptr(p.type) or isinstance(p.type.pointee, (ir.VoidType, ir.StructType, ir.ArrayType)):
            raise low.error(f"'{name}' needs a pointer to a scalar or vector type", e.args[0].loc)
        v = low.convert(a[1], p.type.pointee, e.args[1].loc, "pass")
        return ir.Comma(ir.VOID, loc, [ir.Store(v.type, loc, p, v)])
    mk = B.vector_make_name(name)
    if mk is not None:
        a = _args(low, e, mk.count)
        elems = [_conv(low, x, mk.elem, ax.loc) for x, ax in zip(a, e.args)]
        return ir.MakeVector(mk, loc, elems)
    if name in B.BITOPS:
        iname, ats, rt = B.BITOPS[name]
        a = _args(low, e, len(ats))
        for x, ax in zip(a, e.args):
            if not is_int(x.type):
                raise low.error(f"'{name}' needs integer arguments, not '{tname(x.type)}'", ax.loc)
        return _intr(rt, loc, iname, [_conv(low, x, t, ax.loc) for x, t, ax in zip(a, ats, e.args)])
    if name in B.REINTERPRET:
        iname, at, rt = B.REINTERPRET[name]
        a = _args(low, e, 1)
        return _intr(rt, loc, iname, [_conv(low, a[0], at, e.args[0].loc)])
    if name in B.CONVERSIONS:
        ft, tt, rnd = B.CONVERSIONS[name]
        a = _args(low, e, 1)
        v = _conv(low, a[0], ft, e.args[0].loc)
        if rnd and ft.kind == "float":
            fname = {"rn": "rint", "rd": "floor", "ru": "ceil"}.get(rnd)
            if fname:
                v = _intr(ft, loc, fname, [v])
        return ir.Cast(tt, loc, v) if v.type != tt else v
    if name in B.ROUNDED_ARITH:
        a = _args(low, e, 2)
        t = F64 if name.startswith("__d") else F32
        return low.binary_values(B.ROUNDED_ARITH[name], _conv(low, a[0], t, loc), _conv(low, a[1], t, loc), loc)
    if name in ("__frcp_rn", "__drcp_rn"):
        a = _args(low, e, 1)
        t = F64 if name.startswith("__d") else F32
        return ir.Binary(t, loc, "div", ir.Const(t, loc, 1.0), _conv(low, a[0], t, loc))
    if name in B.MATH:
        iname, fixed, n = B.MATH[name]
        a = _args(low, e, n)
        for x, ax in zip(a, e.args):
            if not is_arith(x.type):
                raise low.error(f"no matching function for call to '{name}' with argument of type "
                                f"'{tname(x.type)}'", ax.loc)
        t = fixed or _math_overload(low, name, a, e)
        return _intr(t, loc, iname, [_conv(low, x, t, ax.loc) for x, ax in zip(a, e.args)])
    if name in B.CLASSIFY:
        a = _args(low, e, 1)
        if not name.startswith("__") and is_arith(a[0].type) and a[0].type.kind != "float":
            # std's integer templates of isnan & co. are constexpr host functions
            from .float_parts import host_template_error
            raise host_template_error(low, name, a[0], loc)
        t = F32 if name.endswith("f") and name.startswith("__") else _float_type_of(low, a[0], e.args[0].loc, name)
        return _intr(BOOL, loc, B.CLASSIFY[name], [_conv(low, a[0], t, e.args[0].loc)])
    if name in ("min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax"):
        a = _args(low, e, 2)
        for x, ax in zip(a, e.args):
            if not is_arith(x.type):
                raise low.error(f"no matching function for call to '{name}' with argument of type "
                                f"'{tname(x.type)}'", ax.loc)
        fixed = {"umin": U32, "umax": U32, "llmin": I64, "llmax": I64, "ullmin": U64, "ullmax": U64}.get(name)
        if fixed is None and (a[0].type.kind == "float") != (a[1].type.kind == "float"):
            # CUDA has no mixed integer/floating min/max overload: nvcc finds it ambiguous
            raise low.error(f"call to '{name}' with '{tname(a[0].type)}' and '{tname(a[1].type)}' is ambiguous; "
                            "convert one argument", e.loc)
        t = fixed or usual_arithmetic(a[0].type, a[1].type)
        kind = "min" if "min" in name else "max"
        args = [_conv(low, x, t, ax.loc) for x, ax in zip(a, e.args)]
        if t.kind == "float":
            return _intr(t, loc, "f" + kind, args)
        return _intr(t, loc, kind, args)
    if name in ("abs", "labs", "llabs"):
        a = _args(low, e, 1)
        v = a[0]
        if not is_arith(v.type):
            raise low.error(f"no matching function for call to '{name}' with argument of type "
                            f"'{tname(v.type)}'", e.args[0].loc)
        if v.type.kind == "float" and name == "abs":
            return _intr(v.type, loc, "fabs", [v])
        t = {"labs": I64, "llabs": I64}.get(name) or promote(v.type)
        if not t.signed:
            t = I32 if t.bits == 32 else I64
        return _intr(t, loc, "abs", [_conv(low, v, t, e.args[0].loc)])
    if name in ("__builtin_inff", "__builtin_inf"):
        _args(low, e, 0)
        t = F32 if name.endswith("f") else F64
        return ir.Const(t, loc, math.inf)
    if name in ("__builtin_nanf", "__builtin_nan"):
        if len(e.args) != 1:
            _args(low, e, 1)
        t = F32 if name.endswith("f") else F64
        return ir.Const(t, loc, math.nan)
    raise low.error(f"use of undeclared identifier '{name}'", e.func.loc)


def _argument_text(low, e: A.CallExpr) -> str:
    """The source text between a call's parentheses (assert's condition, for
    its message), when the call sits on one line as written."""
    src = low.ck.pp.source_line(e.loc.file, e.loc.line) or ""
    i = src.find("(", max(e.loc.col - 1, 0))
    depth = 0
    for j in range(max(i, 0), len(src)):
        depth += {"(": 1, ")": -1}.get(src[j], 0)
        if depth == 0 and i >= 0:
            return src[i + 1:j].strip()
    return "condition"


def _printf(low, e: A.CallExpr) -> ir.Expr:
    """printf(format, args...): checked against the format (printf_format.py)."""
    from .printf_format import conversions, string_literal, INT_CONVS, FLOAT_CONVS
    if not e.args or not isinstance(e.args[0], A.StringLit):
        raise low.error("printf needs a string literal as its format", e.loc)
    fmt = string_literal(e.args[0].text)
    try:
        convs = conversions(fmt)
    except ValueError as err:
        raise low.error(str(err), e.args[0].loc) from None
    args = e.args[1:]
    if len(args) != len(convs):
        raise low.error(f"the printf format has {len(convs)} conversion{'s' if len(convs) != 1 else ''} "
                        f"but {len(args)} argument{'s' if len(args) != 1 else ''} follow", e.loc)
    words = [ir.Const(I32, e.loc, low.ck.string_id(fmt))]
    for c, a in zip(convs, args):
        if c.conv == "s":
            if not isinstance(a, A.StringLit):
                raise low.error("%s needs a string literal argument (device strings cannot be printed)", a.loc)
            words.append(ir.Const(I64, a.loc, low.ck.string_id(string_literal(a.text))))
            continue
        v = low.rvalue(a)
        if c.conv in INT_CONVS:
            if not is_int(v.type):
                raise low.error(f"'{c.text}' needs an integer argument, not '{tname(v.type)}'", a.loc)
            v = low.convert(v, promote(v.type), a.loc)
        elif c.conv in FLOAT_CONVS:
            if not (is_arith(v.type) and v.type.kind == "float"):
                raise low.error(f"'{c.text}' needs a floating-point argument, not '{tname(v.type)}'", a.loc)
            v = low.convert(v, F64, a.loc)
        elif c.conv == "p":
            if not is_ptr(v.type):
                raise low.error(f"'%p' needs a pointer argument, not '{tname(v.type)}'", a.loc)
            v = ir.Cast(U64, a.loc, v)
        words.append(v)
    return ir.Intrinsic(I32, e.loc, "printf", words)


def _atomic(low, kind: str, e: A.CallExpr) -> ir.Expr:
    n = 3 if kind == "atomic_cas" else 2
    a = _args(low, e, n)
    p = a[0]
    name = e.func.name
    if not is_ptr(p.type):
        raise low.error(f"the first argument of '{name}' must be a pointer, not '{tname(p.type)}'", e.args[0].loc)
    t = p.type.pointee
    if t not in B.ATOMIC_TYPES[kind]:
        raise low.error(f"'{name}' is not available for '{tname(t)}'", e.args[0].loc)
    if pq_of(p)[0]:
        raise low.error(f"'{name}' cannot modify memory through a pointer to const", e.args[0].loc)
    rest = [_conv(low, x, t, ax.loc) for x, ax in zip(a[1:], e.args[1:])]
    return ir.Intrinsic(t, e.loc, kind, [p] + rest)
