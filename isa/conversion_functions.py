"""Conversion functions: a struct's `__device__ operator T *()` called where
its object initialises, is assigned to or is cast to a non-struct type (C++
[class.conv.fct], [over.match.conv]). The CUDA samples' SharedMemory idiom
is the use: `T *sdata = SharedMemory<T>();` converts a value-initialised
temporary with `operator T *()`, which returns the dynamic shared memory.

cxx_tokens.py makes each one a member function named 'S::operator T *'
returning T *. The candidates are those whose result converts to the target
implicitly (a pointer to the same type or to void, adding const; arithmetic
to arithmetic) and that the object's constness allows; for a non-const
object a non-const one is better (its implicit object parameter binds with
less qualification, [over.ics.rank]/3.2.6), then an exact result type.

Where it applies: initialisation, assignment and casts, the arguments of a
device function (overloads.py ranks it as a user-defined conversion) and
`return`, the operands of built-in operators, subscripts, `switch` and
built-in functions (`operand_value`); conditions (`if`, loops, `?:`, `!`,
`&&`, `||`) convert to bool contextually. An `explicit operator T()` (named 'S::explicit operator T')
is called only by direct initialisation, a cast or a condition, and only
when it yields T itself ([over.match.conv]p1.2): `if (b)` and `(bool)b`
call `explicit operator bool()`, `int x = b;` and `f(b)` do not, as nvcc.
"""
from __future__ import annotations

from typing import Optional

from . import ast as A
from . import ir
from .diagnostics import CompileError
from .places import is_arith, is_ptr, pq_of, strip_spaces, tname, with_pq


def conversion_value(low, e: A.Expr, t: ir.Type, target_pconst: bool,
                     direct: bool = False) -> Optional[ir.Expr]:
    """The value of struct-typed `e` converted to `t` by one of its
    conversion functions; None when `e` is not of a struct type that has any.
    `direct`: a cast or a condition, where an explicit one yielding `t` applies."""
    if isinstance(t, ir.StructType) or low.const_only:
        return None
    obj = _struct_object(low, e)
    if obj is None:
        return None
    st, this = obj
    cands = functions_of(low.ck, st)
    if not cands:
        return None
    const = pq_of(this)[0]
    viable = [i for i in cands if (i.params_q[0].pconst or not const) and
              (converts(i, t, target_pconst) if not _explicit(i) else direct and _yields(i, t, target_pconst))]
    if not viable:
        raise low.error(f"no suitable conversion function from '{st.name}' to '{tname(t)}' exists", e.loc)

    def rank(i):
        return (bool(i.params_q[0].pconst) and not const,
                not (strip_spaces(i.ret_q.type) == strip_spaces(t) and i.ret_q.pconst == target_pconst))
    best = min(viable, key=rank)
    if sum(rank(i) == rank(best) for i in viable) > 1:
        raise low.error(f"more than one conversion function from '{st.name}' to '{tname(t)}' applies", e.loc)
    return _call(low, best, this, e.loc)


def operand_value(low, e: A.Expr) -> ir.Expr:
    """The value of `e` as an operand of a built-in operator (arithmetic,
    comparison, subscript, switch) or a built-in function: an object of a
    struct with conversion functions converts by its one non-explicit
    conversion function to a non-class type ([over.match.oper]p7: the
    built-in candidates take the converted operand; with two, `x + 1` is
    ambiguous, refused by name). Anything else is `low.rvalue(e)`."""
    obj = None if low.const_only else _struct_object(low, e)
    if obj is None:
        return low.rvalue(e)
    st, this = obj
    cands = [i for i in implicit_functions(low.ck, st, pq_of(this)[0])
             if not isinstance(i.ret_q.type, ir.StructType) and i.sret is None]
    if not cands:
        return low.rvalue(e)
    if len(cands) > 1:
        raise low.error(f"more than one conversion function from '{st.name}' to a built-in type applies "
                        f"(operator {', operator '.join(tname(i.ret_q.type) for i in cands)})", e.loc)
    return _call(low, cands[0], this, e.loc)


def _call(low, info, this: ir.Expr, loc) -> ir.Expr:
    """The call of conversion function `info` on the object at `this`."""
    if info.fn.body is None and low.ck.templates is not None:   # a class template's member
        low.ck.templates.classes.ensure_lowered(info, loc)
    ptype = info.fn.params[0].type
    r = ir.Call(info.fn.ret, loc, info.fn, [this if this.type == ptype else ir.Cast(ptype, loc, this)])
    return with_pq(r, (info.ret_q.pconst, info.ret_q.pvolatile), info.ret_q.deep)


def functions_of(ck, st: ir.StructType) -> list:
    """The FuncInfos of struct `st`'s conversion functions, explicit ones too."""
    keys = (f"{st.name}::operator ", f"{st.name}::explicit operator ")
    return [i for k, infos in ck.overloads.items() if k.startswith(keys) for i in infos]


def _explicit(info) -> bool:
    return info.fn.name.partition("::")[2].startswith("explicit ")


def _yields(info, t: ir.Type, target_pconst: bool) -> bool:
    """The result is `t` itself, up to a qualification conversion."""
    r = info.ret_q
    return strip_spaces(r.type) == strip_spaces(t) and (target_pconst or not r.pconst or not is_ptr(t))


def implicit_functions(ck, st: ir.StructType, const: bool) -> list:
    """The conversion functions an object of `st` (`const`) converts by
    implicitly (overload resolution's user-defined conversions)."""
    return [i for i in functions_of(ck, st) if not _explicit(i) and (i.params_q[0].pconst or not const)]


def _any_conversions(ck) -> bool:
    """Whether any struct has a conversion function; asked at every condition,
    so kept while the number of function names stays (a new one adds a name)."""
    n, found = getattr(ck, "_conversions_seen", (-1, False))
    if n != len(ck.overloads):
        found = any(k.partition("::")[2].startswith(("operator ", "explicit operator ")) for k in ck.overloads)
        ck._conversions_seen = (len(ck.overloads), found)
    return found


def converts(info, t: ir.Type, target_pconst: bool) -> bool:
    r = info.ret_q.type
    if isinstance(r, ir.StructType) or info.sret is not None:
        return False
    if is_ptr(t):
        return is_ptr(r) and (strip_spaces(r.pointee) == strip_spaces(t.pointee) or t.pointee == ir.VOID) \
            and (target_pconst or not info.ret_q.pconst)
    if t == ir.BOOL:
        return is_arith(r) or is_ptr(r)
    return is_arith(t) and is_arith(r)


def _struct_object(low, e: A.Expr):
    """(struct type, its address) for `e` of a struct type: a named object
    (or member, element, *p) in place; `S()`, `S{..}` a temporary
    (initialisers.struct_temporary). None for anything else."""
    if isinstance(e, (A.ListInit, A.CastExpr)):     # naming a class template's instance may make one
        if not isinstance(low.type_of_name(e.type_name).type, ir.StructType):
            return None
        lv = low.lvalue(e)
        return lv.type, lv.addr
    if not _any_conversions(low.ck):
        return None
    if isinstance(e, A.CallExpr) and isinstance(e.func, A.Name) and any(
            i.sret is not None for i in low.ck.overloads.get(e.func.name, [])):   # a struct result: its temporary
        saved = len(low.temps)
        try:
            lv = low.lvalue(e)
        except CompileError:
            lv = None
        if lv is None or not isinstance(lv.type, ir.StructType):
            del low.temps[saved:]
            return None
        return lv.type, lv.addr
    if isinstance(e, (A.Name, A.Member, A.Index)) or (isinstance(e, A.UnaryOp) and e.op == "*"):
        if isinstance(e, A.Name):
            sym = low.lookup(e.name)
            if sym is None or sym.kind not in ("var", "global"):
                return None
        try:
            st = low.type_only(e)
        except CompileError:   # not an object: the caller's own lowering reports it
            return None
        if not isinstance(st, ir.StructType):
            return None
        return st, low.rvalue(A.UnaryOp(e.loc, "&", e))
    return None
