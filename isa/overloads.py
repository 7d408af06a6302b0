"""Overload resolution of calls (ISO C++ [over.match]) for gpuemu's types.

A call of a name with several declarations (device functions, member
functions, operators, a function template beside them) picks the best
viable function: each argument's implicit conversion sequence is ranked
([over.ics.rank]) as an exact match (identity, lvalue-to-rvalue,
array-to-pointer, qualification adjustment), a promotion (bool/char/short
to int, float to double), a conversion (the other arithmetic, pointer and
boolean conversions) or a user-defined conversion (a struct's non-explicit
conversion function, conversion_functions.py); a function is better than another when none of its
arguments converts worse and one converts better, and a non-template beats a
template instance that converts the same. No viable function, or no single
best one, is a CompileError naming the candidates, as nvcc (EDG) words it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import ast as A
from . import ir
from .diagnostics import CompileError
from .places import is_arith, is_ptr, pq_of, strip_spaces, tname

EXACT, PROMOTION, CONVERSION, USER = 0, 1, 2, 3


@dataclass
class Arg:
    """What overload resolution needs of one argument expression."""
    type: ir.Type          # after array-to-pointer decay
    lvalue: bool           # a place a non-const reference can bind to
    const: bool            # the place is const
    pconst: bool           # a pointer's pointee is const
    null: bool             # a null pointer constant (0, NULL, nullptr)
    user: tuple = ()       # a struct's conversion functions (FuncInfos) it converts by implicitly


@dataclass
class Param:
    """One parameter as declared: its type, pointee constness and reference kind."""
    type: ir.Type
    pconst: bool
    ref: bool              # declared T& or const T&
    const: bool            # top-level const (a const T& when ref)
    implicit: bool = False  # a member operator's object: binds to an rvalue too ([over.match.funcs]p5)


@dataclass
class Conv:
    """An implicit conversion sequence, as far as [over.ics.rank] compares it."""
    rank: int
    qual: bool = False        # a qualification adjustment (T* to const T*)
    ref_const: Optional[bool] = None   # a reference binding: to a const referred type
    to_bool: bool = False     # a pointer converted to bool
    user: Optional[tuple] = None   # (conversion function, the standard conversion after it)


@dataclass
class Candidate:
    info: object           # typecheck.FuncInfo (of a template: its would-be instance's signature)
    params: list           # list[Param]
    template: Optional[tuple] = None   # (TemplateDef, template argument values) for a template
    member: bool = False   # a member operator: its first parameter is the object itself (operators.py)


def params_of(info) -> list:
    """The declared parameters of a FuncInfo (this included, for a member)."""
    return [Param(q.type, q.pconst, r, q.const) for q, r in zip(info.params_q, info.declared_refs)]


def describe(low, e: A.Expr) -> Arg:
    """The argument's type and value category, found without keeping any code;
    kept per node, as nested operator expressions ask again for their operands."""
    cache = low.__dict__.setdefault("described", {})    # AST nodes and scopes hash by identity
    key = (e, low.scope)         # a body lowered again in another scope (a cg lambda's) asks anew
    if key not in cache:
        cache[key] = _describe(low, e)
    return cache[key]


def _describe(low, e: A.Expr) -> Arg:
    saved = len(low.temps)
    try:
        lv = None
        try:
            lv = low.lvalue(e)
        except CompileError:
            pass
        t = lv.type if lv is not None else low.type_only(e)
        # a call's struct result has a place but is an rvalue
        lvalue = lv is not None and lv.kind in ("mem", "reg", "vecelem") and \
            not getattr(lv, "temporary", False) and not isinstance(e, (A.ListInit, A.CastExpr))
        const = lv is not None and lv.const
        if isinstance(t, ir.ArrayType):
            return Arg(ir.PointerType(t.elem), lvalue, const, const, False)
        pconst = False
        null = isinstance(e, A.NullLit) or (isinstance(e, A.IntLit) and _int_value(e.text) == 0)
        if is_ptr(t):
            pconst = pq_of(low.rvalue(e))[0] if lv is None else lv.pq[0]
        user = ()
        if isinstance(t, ir.StructType):
            from .conversion_functions import implicit_functions
            user = tuple(implicit_functions(low.ck, t, const))
        return Arg(t, lvalue, const, pconst, null, user)
    finally:
        del low.temps[saved:]


def _int_value(text: str):
    try:
        return int(text.rstrip("uUlL"), 0)
    except ValueError:
        return None


def _promotes(a: ir.ScalarType, p: ir.ScalarType) -> bool:
    if p.kind == "int" and p.bits == 32 and p.signed:
        return a.kind == "bool" or (a.kind == "int" and a.bits < 32)
    return p.kind == "float" and p.bits == 64 and a.kind == "float" and a.bits == 32


def conversion(a: Arg, p: Param) -> Optional[Conv]:
    """The implicit conversion sequence from argument `a` to parameter `p`, or
    None when there is none (the function is not viable)."""
    pt = strip_spaces(p.type)
    at = strip_spaces(a.type)
    if p.ref and not p.const:
        # a non-const reference binds only to a non-const place of its own type
        if (not a.lvalue and not p.implicit) or a.const:
            return None
        if ir.overload_identity(at) != ir.overload_identity(pt) or (is_ptr(pt) and a.pconst and not p.pconst):
            return None     # not even to another type of one representation ('long &' to a long long)
        return Conv(EXACT, ref_const=False)
    c = _value_conversion(a, pt, p.pconst)
    if c is not None and p.ref and at == pt:
        c.ref_const = True          # a const reference bound to the argument itself
    return c


def _value_conversion(a: Arg, pt: ir.Type, pconst: bool) -> Optional[Conv]:
    at = strip_spaces(a.type)
    if isinstance(pt, (ir.StructType, ir.VectorType)):
        return Conv(EXACT) if at == pt else None
    if a.user:      # a struct's conversion function, then a standard conversion ([over.ics.user])
        from .conversion_functions import converts
        seqs = [(_value_conversion(Arg(i.ret_q.type, False, False, i.ret_q.pconst, False), pt, pconst), i)
                for i in a.user if converts(i, pt, pconst)]
        seqs = [(c, i) for c, i in seqs if c is not None]
        if not seqs:
            return None
        second, fn = min(seqs, key=lambda x: x[0].rank)
        return Conv(USER, user=(fn, second))
    if is_arith(pt):
        if is_arith(at):
            if ir.overload_identity(at) == ir.overload_identity(pt):
                return Conv(EXACT)
            if ir.scoped_enum(at) is not None or ir.scoped_enum(pt) is not None:
                return None         # a scoped enum converts to nothing implicitly ([conv.integral]p1)
            return Conv(PROMOTION) if _promotes(at, pt) else Conv(CONVERSION)
        if is_ptr(at) and pt.kind == "bool":
            return Conv(CONVERSION, to_bool=True)
        return None
    if is_ptr(pt):
        if is_ptr(at):
            if a.pconst and not pconst:
                return None
            if strip_spaces(at.pointee) == strip_spaces(pt.pointee):
                return Conv(_same(at, pt), qual=pconst and not a.pconst)
            if isinstance(pt.pointee, ir.VoidType):
                return Conv(CONVERSION)
            return None
        if a.null:
            return Conv(CONVERSION)
    return None


def _same(at: ir.Type, pt: ir.Type) -> int:
    """EXACT for one type; a place or pointee of another type of the same
    representation ('long' for 'long long') ranks as a conversion, so that
    the overload of its own type wins (C++ would not bind it at all)."""
    return EXACT if ir.overload_identity(at) == ir.overload_identity(pt) else CONVERSION


def _compare(s1: Conv, s2: Conv) -> int:
    """-1 when s1 is the better conversion sequence, 1 when s2 is, else 0."""
    if s1.rank != s2.rank:
        return -1 if s1.rank < s2.rank else 1
    if s1.user is not None:     # by one conversion function: the better second conversion
        return _compare(s1.user[1], s2.user[1]) if s1.user[0] is s2.user[0] else 0
    if s1.to_bool != s2.to_bool:
        return 1 if s1.to_bool else -1
    if s1.qual != s2.qual:
        return 1 if s1.qual else -1
    if s1.ref_const is not None and s2.ref_const is not None and s1.ref_const != s2.ref_const:
        return 1 if s1.ref_const else -1
    return 0


def _better(c1: Candidate, v1: list, c2: Candidate, v2: list) -> bool:
    """c1 is a better function than c2 ([over.match.best])."""
    cmp = [_compare(x, y) for x, y in zip(v1, v2)]
    if any(c > 0 for c in cmp):
        return False
    if any(c < 0 for c in cmp):
        return True
    if c1.template is not None and c2.template is not None:
        return more_specialised(c1.template[0], c2.template[0], len(v1))
    return c1.template is None and c2.template is not None


def more_specialised(td1, td2, n: int) -> bool:
    """Template td1 is more specialised than td2 over the first n function
    parameters ([temp.func.order], for the forms gpuemu compares: T against
    T *, const T * and a named type): td2's forms match all of td1's and not
    the other way round."""
    if td1.ast is None or td2.ast is None:
        return False
    from .templates import param_forms
    f1, f2 = param_forms(td1)[:n], param_forms(td2)[:n]
    return deduces(f2, f1) and not deduces(f1, f2)


def deduces(patterns: list, forms: list) -> bool:
    """Parameters of the forms `patterns` deduce from arguments of `forms`,
    each template parameter to one type throughout ((T, T) not from (U, int))."""
    bound: dict = {}
    for (tparam, base, depth, pconst), form in zip(patterns, forms):
        if not tparam:
            if form[0] or (base, depth, pconst) != form[1:]:
                return False
            continue
        if form[2] < depth or (pconst and not form[3]):
            return False
        if bound.setdefault(base, (form[0], form[1], form[2] - depth)) != (form[0], form[1], form[2] - depth):
            return False
    return True


def signature(name: str, params: list) -> str:
    """f(int, const float *) as nvcc names a candidate."""
    return f"{name}({', '.join(spell_param(p) for p in params)})"


def spell_param(p: Param) -> str:
    t = p.type
    if is_ptr(t):
        s = ("const " if p.pconst else "") + tname(strip_spaces(t.pointee)) + " *"
    else:
        s = tname(t)
    if p.ref:
        s = ("const " if p.const else "") + s + " &"
    return s


def spell_arg(a: Arg) -> str:
    if is_ptr(a.type):
        return ("const " if a.pconst else "") + tname(strip_spaces(a.type.pointee)) + " *"
    return tname(a.type)


def choose(low, name: str, cands: list, args: list, loc, hidden: int = 0,
           described: Optional[list] = None) -> Candidate:
    """The best viable candidate for a call with argument expressions `args`
    (`described`, when the caller has them already); the first `hidden` ones
    (a member call's `&obj` for `this`) are not named in diagnostics."""
    described = described or [describe(low, a) for a in args]
    viable = []
    for c in cands:
        n_req = len(c.params) - sum(1 for d in c.info.defaults[:len(c.params)] if d is not None)
        if not n_req <= len(args) <= len(c.params):
            continue
        convs = [conversion(a, p) for a, p in zip(described, c.params)]
        if all(v is not None for v in convs):
            viable.append((c, convs))
    best = [x for x in viable if all(x is y or _better(x[0], x[1], y[0], y[1]) for y in viable)]
    types = ", ".join(spell_arg(a) for a in described[hidden:])
    if name.startswith("operator"):     # an operator expression (operators.py), worded as nvcc does
        shown = ", ".join(signature(name, c.params[1:] if c.member else c.params) for c in cands)
        if not viable:
            raise low.error(f"no operator '{name[8:]}' matches these operands ({types}); candidates: {shown}", loc)
        if len(best) != 1:
            raise low.error(f"more than one operator '{name[8:]}' matches these operands ({types})", loc)
        return best[0][0]
    if not viable:
        shown = ", ".join(signature(name, c.params[hidden:]) for c in cands)
        raise low.error(f"no instance of overloaded function '{name}' matches the argument types "
                        f"({types}); candidates: {shown}", loc)
    if len(best) != 1:
        among = [signature(name, c.params[hidden:]) for c, _ in viable]
        raise low.error(f"more than one instance of overloaded function '{name}' matches the argument "
                        f"types ({types}): {', '.join(among)}", loc)
    return best[0][0]


def template_candidate(low, tps, td, name: A.Name, args: list, loc) -> Optional[Candidate]:
    """The function template `td` as a candidate of a call: its arguments
    deduced ([temp.deduct.call]) and its would-be instance's parameters, or
    None when deduction fails (the template is then not viable)."""
    try:
        vals = tps.explicit_args(td, name.targs or [], low.lookup, loc)
        if len(vals) < len(td.params):
            vals = tps.deduce(low, td, vals, args, loc)
        fdef = tps.parsed(td)
        tps.stack.append(tps.bind(td, vals, loc))
        try:
            info = low.ck.function_signature(fdef.specs, fdef.declarator, fdef)
        finally:
            tps.stack.pop()
    except CompileError:
        return None
    return Candidate(info, params_of(info), (td, vals))
