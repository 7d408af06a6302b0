"""Initialisers of local aggregates: C's brace lists with brace elision and
zero fill (C11 6.7.9), flattened to (byte offset, type, value) stores; the
same flattening makes the init image of __constant__/__device__ variables."""
from __future__ import annotations

import math

from . import ast as A
from . import ir
from .const_fold import fold
from .conversions import const_value
from .diagnostics import CompileError
from .ir import I64
from .places import LValue, clone, tname

_FLT_MAX = 3.4028234663852886e38


class InitialiserLowering:
    """Mixin of FunctionLowering: brace-list initialisers."""

    direct_init = False     # inside `T x{...}` / `T{...}`: narrowing conversions are refused

    def init_item(self, x: A.Expr, t: ir.Type) -> ir.Expr:
        """One initialiser converted to t (a narrowing one refused inside `T x{...}`)."""
        from .conversion_functions import conversion_value
        v = conversion_value(self, x, t, False)         # int x{w}; of a struct with operator int()
        v = self.rvalue(x) if v is None else v
        if self.direct_init:
            self.check_narrowing(x, v, t)
        return self.convert(v, t, x.loc, "initialise")

    def check_narrowing(self, x: A.Expr, v: ir.Expr, t: ir.Type) -> None:
        """C++ [dcl.init.list]p7: inside braces, no float -> integer, no
        narrower float unless a constant in range, no integer -> float unless a
        constant that converts back exactly, no integer -> narrower integer
        unless a constant that fits. (nvcc 13.0 warns #2361 and compiles; here
        it is refused, the safe side of the subset.) Conversions to bool are
        left alone, as nvcc does."""
        s = v.type
        if not (isinstance(s, ir.ScalarType) and isinstance(t, ir.ScalarType)) or s == t or t.kind == "bool":
            return
        c = self.constant_of(x)
        if s.kind == "float":
            bad = t.kind == "int" or (t.bits < s.bits and (
                c is None or (math.isfinite(c) and abs(c) > _FLT_MAX)))
        elif t.kind == "float":
            bad = c is None or float(const_value(c, t)) != c
        elif c is None:
            bad = not (_lo(t) <= _lo(s) and _hi(s) <= _hi(t))
        else:
            bad = not (_lo(t) <= c <= _hi(t))
        if bad:
            raise self.error(f"narrowing conversion from '{tname(s)}' to '{tname(t)}' inside braces "
                             f"(C++ list-initialisation forbids it; use a cast)", x.loc)

    def constant_of(self, x: A.Expr):
        """x's value if it is a constant expression (a const variable's too), else None."""
        low = type(self).for_constants(self.ck, self.lookup)
        try:
            return fold(low.rvalue(x))
        except CompileError:
            return None

    def list_init_value(self, e: A.ListInit, t: ir.Type) -> ir.Expr:
        """`T{...}` / `T()` of a scalar, pointer or vector type."""
        items = e.init.items
        saved, self.direct_init = self.direct_init, True
        try:
            if isinstance(t, ir.VectorType):
                if len(items) > t.count:
                    raise self.error("too many initialisers", e.loc)
                elems = [self.init_item(x, t.elem) for x in items]
                elems += [ir.Const(t.elem, e.loc, const_value(0, t.elem))] * (t.count - len(elems))
                return ir.MakeVector(t, e.loc, elems)
            if isinstance(t, (ir.ArrayType, ir.VoidType)):
                raise self.error(f"'{tname(t)}{{...}}' is not a value", e.loc)
            if len(items) > 1:
                raise self.error("too many initialisers for a scalar", e.loc)
            x = items[0] if items else None
            if isinstance(x, A.InitList):
                raise self.error("braces around a scalar initialiser", x.loc)
            return self.init_item(x, t) if x is not None else self.zero(t, e.loc)
        finally:
            self.direct_init = saved

    def struct_temporary(self, e: A.Expr) -> LValue:
        """The place of a struct temporary: `S{...}`, `S()` or `S(s)`."""
        t = self.type_of_name(e.type_name).type
        if not isinstance(t, ir.StructType):
            raise self.error("expression is not assignable", e.loc)
        tmp = self.temp(t, e.loc, "local")
        pt = ir.PointerType(t, "local")
        addr = ir.AddrOf(pt, e.loc, tmp)
        if isinstance(e, A.CastExpr):
            v = self.lvalue(e.a) if not isinstance(e.a, A.InitList) else None
            if v is None or v.type != t:
                raise self.error(f"no conversion to '{tname(t)}': a struct is made from braces, "
                                 f"'{tname(t)}{{...}}', or copied from one of its type", e.loc)
            work = [self.struct_copy(addr, e.a, t, e.loc)]
        else:
            saved, self.direct_init = self.direct_init, True
            try:
                work = self.aggregate_stores(t, addr, e.init)
            finally:
                self.direct_init = saved
        return LValue("mem", t, e.loc, addr=ir.Comma(pt, e.loc, work + [ir.AddrOf(pt, e.loc, tmp)]))

    def aggregate_stores(self, t: ir.Type, base_addr: ir.Expr, init: A.InitList) -> list:
        """Stores of every scalar member of an aggregate at base_addr from a
        brace list, the missing ones zero (C11 6.7.9p21)."""
        flat = self.flatten_init(t, init)
        given = {off: (st, e) for off, st, e in flat}
        out = []
        for off, st in scalar_slots(t, 0):
            if off in given:
                st2, x = given[off]
            else:
                st2, x = st, self.zero(st, init.loc)
            addr = base_addr if off == 0 else ir.PtrAdd(base_addr.type, init.loc, clone(base_addr),
                                                         ir.Const(I64, init.loc, off))
            addr = ir.Cast(ir.PointerType(st2, "local"), init.loc, addr)
            out.append(ir.Store(st2, x.loc, addr, x))
        return out

    def string_initialiser(self, t: ir.Type, init):
        """`char s[] = "hi"` (or `{"hi"}`): the literal's bytes and its NUL as
        a brace list of the element type, for an array of char, signed char or
        unsigned char; other initialisers unchanged. A literal longer than
        the array (its NUL counted, as C++ [dcl.init.string] does) is an error."""
        if isinstance(init, A.InitList) and len(init.items) == 1 and isinstance(init.items[0], A.StringLit):
            init = init.items[0]
        if not (isinstance(init, A.StringLit) and isinstance(t, ir.ArrayType) and
                isinstance(t.elem, ir.ScalarType) and t.elem.kind == "int" and t.elem.bits == 8):
            return init
        from .printf_format import string_literal
        data = bytearray()
        for ch in string_literal(init.text) + "\0":
            data += bytes([ord(ch)]) if ord(ch) < 256 else ch.encode("utf-8")
        if t.count is not None and len(data) > t.count:
            raise self.error(f"the string literal needs {len(data)} bytes with its NUL; it does not fit "
                             f"'{tname(t)}'", init.loc)
        words = [("unsigned" if not t.elem.signed else "signed", init.loc), ("char", init.loc)]
        elem = A.TypeName(init.loc, A.DeclSpecs(init.loc, [], set(), [], words), [])
        return A.InitList(init.loc, [A.CastExpr(init.loc, elem, A.IntLit(init.loc, str(b))) for b in data])

    def init_list_length(self, elem: ir.Type, init: A.InitList) -> int:
        n_scalars = len(scalar_slots(elem, 0))
        if all(isinstance(x, A.InitList) for x in init.items) or n_scalars == 1:
            return len(init.items)
        return -(-len(init.items) // n_scalars)

    def zero(self, t: ir.Type, loc: ir.Loc) -> ir.Expr:
        if isinstance(t, ir.PointerType):
            return ir.Cast(t, loc, ir.Const(I64, loc, 0))
        if isinstance(t, ir.VectorType):
            return ir.MakeVector(t, loc, [ir.Const(t.elem, loc, const_value(0, t.elem))] * t.count)
        return ir.Const(t, loc, const_value(0, t))

    def flatten_init(self, t: ir.Type, init: A.Expr) -> list:
        """[(byte offset, scalar/pointer/vector type, converted Expr)] for an
        initialiser of type t, with C's brace elision (C11 6.7.9p20)."""
        out: list = []
        if not isinstance(init, A.InitList):
            if isinstance(t, (ir.ArrayType, ir.StructType)):
                raise self.error("an array or struct must be initialised with a brace-enclosed list", init.loc)
            out.append((0, t, self.convert(self.rvalue(init), t, init.loc, "initialise")))
            return out
        items = list(init.items)
        pos = self._init_aggregate(t, 0, items, 0, out, init.loc, braced=True)
        if pos < len(items):
            raise self.error("too many initialisers", items[pos].loc)
        return out

    def _init_aggregate(self, t, offset, items, pos, out, loc, braced) -> int:
        """Consume initialisers for type t from items[pos:]; return new pos."""
        if isinstance(t, ir.ArrayType):
            n = t.count
            i = 0
            while pos < len(items) and (n is None or i < n):
                pos = self._init_member(t.elem, offset + i * t.elem.size, items, pos, out)
                i += 1
            return pos
        if isinstance(t, ir.StructType):
            for f in t.fields[:1] if t.union else t.fields:     # a union's braces initialise its first member
                if pos >= len(items):
                    break
                pos = self._init_member(f.type, offset + f.offset, items, pos, out)
            return pos
        if isinstance(t, ir.VectorType):
            for i in range(t.count):
                if pos >= len(items):
                    break
                x = items[pos]
                out.append((offset + i * t.elem.size, t.elem, self.init_item(x, t.elem)))
                pos += 1
            return pos
        x = items[pos]
        if isinstance(x, A.InitList):
            if len(x.items) != 1:
                raise self.error("too many initialisers for a scalar", x.loc)
            x = x.items[0]
        out.append((offset, t, self.init_item(x, t)))
        return pos + 1

    def _init_member(self, t, offset, items, pos, out) -> int:
        x = self.string_initialiser(t, items[pos])
        if isinstance(x, A.InitList):
            if isinstance(t, (ir.ArrayType, ir.StructType, ir.VectorType)):
                sub = list(x.items)
                p = self._init_aggregate(t, offset, sub, 0, out, x.loc, True)
                if p < len(sub):
                    raise self.error("too many initialisers", sub[p].loc)
            else:
                self._init_aggregate(t, offset, [x], 0, out, x.loc, True)
            return pos + 1
        if isinstance(t, ir.StructType) and not isinstance(x, A.InitList):
            # a struct value initialises a struct member directly
            v = None
            try:
                v = self.rvalue(x)
            except CompileError:
                v = None
            if v is not None and v.type == t:
                raise self.error("struct members initialised from struct values are not supported; "
                                 "use a brace list", x.loc)
        if isinstance(t, (ir.ArrayType, ir.StructType)):
            return self._init_aggregate(t, offset, items, pos, out, x.loc, False)
        if isinstance(t, ir.VectorType):
            v = self.rvalue(x)
            if v.type == t:
                out.append((offset, t, v))
                return pos + 1
            return self._init_aggregate(t, offset, items, pos, out, x.loc, False)
        out.append((offset, t, self.init_item(x, t)))
        return pos + 1

    # --------------------------------------------------------- expressions


def _lo(t: ir.ScalarType) -> int:
    return -(1 << (t.bits - 1)) if t.kind == "int" and t.signed else 0


def _hi(t: ir.ScalarType) -> int:
    if t.kind == "bool":
        return 1
    return (1 << (t.bits - 1)) - 1 if t.signed else (1 << t.bits) - 1


def scalar_slots(t: ir.Type, offset: int) -> list:
    """[(offset, type)] of every scalar/pointer/vector inside t."""
    if isinstance(t, ir.ArrayType):
        out = []
        for i in range(t.count or 0):
            out += scalar_slots(t.elem, offset + i * t.elem.size)
        return out
    if isinstance(t, ir.StructType):
        out = []
        for f in t.fields[:1] if t.union else t.fields:     # a union: its first member's
            out += scalar_slots(f.type, offset + f.offset)
        return out
    if isinstance(t, ir.VectorType):
        return [(offset + i * t.elem.size, t.elem) for i in range(t.count)]
    return [(offset, t)]
