"""Initialisers of local aggregates: C's brace lists with brace elision and
zero fill (C11 6.7.9), flattened to (byte offset, type, value) stores; the
same flattening makes the init image of __constant__/__device__ variables."""
from __future__ import annotations

from . import ast as A
from . import ir
from .conversions import const_value
from .diagnostics import CompileError
from .ir import I64


class InitialiserLowering:
    """Mixin of FunctionLowering: brace-list initialisers."""

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
            for f in t.fields:
                if pos >= len(items):
                    break
                pos = self._init_member(f.type, offset + f.offset, items, pos, out)
            return pos
        if isinstance(t, ir.VectorType):
            for i in range(t.count):
                if pos >= len(items):
                    break
                x = items[pos]
                out.append((offset + i * t.elem.size, t.elem, self.convert(self.rvalue(x), t.elem, x.loc, "initialise")))
                pos += 1
            return pos
        x = items[pos]
        if isinstance(x, A.InitList):
            if len(x.items) != 1:
                raise self.error("too many initialisers for a scalar", x.loc)
            x = x.items[0]
        out.append((offset, t, self.convert(self.rvalue(x), t, x.loc, "initialise")))
        return pos + 1

    def _init_member(self, t, offset, items, pos, out) -> int:
        x = items[pos]
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
        out.append((offset, t, self.convert(self.rvalue(x), t, x.loc, "initialise")))
        return pos + 1

    # --------------------------------------------------------- expressions


def scalar_slots(t: ir.Type, offset: int) -> list:
    """[(offset, type)] of every scalar/pointer/vector inside t."""
    if isinstance(t, ir.ArrayType):
        out = []
        for i in range(t.count or 0):
            out += scalar_slots(t.elem, offset + i * t.elem.size)
        return out
    if isinstance(t, ir.StructType):
        out = []
        for f in t.fields:
            out += scalar_slots(f.type, offset + f.offset)
        return out
    if isinstance(t, ir.VectorType):
        return [(offset + i * t.elem.size, t.elem) for i in range(t.count)]
    return [(offset, t)]
