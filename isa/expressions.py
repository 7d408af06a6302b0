"""Expressions: C's operators, conversions and places, lowered to isa.ir.

Usual arithmetic conversions and promotions (conversions.py) become explicit
Casts; conditions become BOOL; pointer arithmetic becomes PtrAdd with byte
offsets; ++/--/compound assignment become Assign/Store with temporaries
when the place or the old value must be kept."""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Optional

from . import ast as A
from . import ir
from .ir import BOOL, I8, I32, U32, I64, U64, F32, F64
from .builtins import SPECIAL_VARS
from .const_fold import fold
from .conversions import usual_arithmetic, promote, const_value, int_literal_type, char_literal_type
from .conversion_functions import conversion_value, operand_value
from .diagnostics import CompileError
from .places import (LValue, pq_of, deep_of, below, with_pq, is_arith, is_int, is_ptr, tname, clone, has_side_effects,
                     strip_spaces, cheap_address)

_BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem", "<<": "shl", ">>": "shr",
           "&": "and", "|": "or", "^": "xor", "==": "eq", "!=": "ne", "<": "lt", "<=": "le",
           ">": "gt", ">=": "ge"}
_CMP = ("eq", "ne", "lt", "le", "gt", "ge")
_SPACE_OF_STORAGE = {"local": "local", "shared": "shared", "extern_shared": "shared", "param": "param",
                     "reg": "local"}


class ExpressionLowering:
    """Mixin of FunctionLowering: expressions, places and conversions."""

    def effect(self, e: A.Expr) -> ir.Expr:
        """An expression evaluated for its side effects only (statement,
        for-step, left of a comma): x++ needs no temporary, and an atomic's
        result is unused (a reduction, RED, on the GPU)."""
        if isinstance(e, A.UnaryOp) and e.op in ("post++", "post--"):
            v = self.user_operator(e, want_place=True)      # a struct's operator++(int)
            if v is not None:
                return v.addr if isinstance(v, LValue) else v
            return self.incdec(e.a, e.op[-2:], e.loc, post=False)
        if isinstance(e, A.CommaExpr):
            return self._comma([self.effect(x) for x in e.items], e.loc)
        if isinstance(e, A.CastExpr):
            q = self.type_of_name(e.type_name)
            if isinstance(q.type, ir.VoidType):
                return self.effect(e.a)
        if isinstance(e, A.CallExpr):
            from .calls import lower_call
            v = lower_call(self, e, want_place=True)
            if isinstance(v, LValue):
                return v.addr
        if isinstance(e, (A.BinOp, A.UnaryOp)):     # `a + b;` with a user operator's struct result
            v = self.user_operator(e, want_place=True)
            if v is not None:
                return v.addr if isinstance(v, LValue) else v
        v = self.rvalue(e, allow_void=True)
        if isinstance(v, ir.Intrinsic) and v.name.startswith("atomic"):
            v.result_used = False
        if isinstance(v.type, (ir.StructType, ir.ArrayType)) and not has_side_effects(v):
            return ir.Const(I32, e.loc, 0)   # `s;` reads nothing the program can see
        return v

    def _comma(self, exprs: list, loc) -> ir.Expr:
        return ir.Comma(exprs[-1].type, loc, exprs)

    def rvalue(self, e: A.Expr, allow_void: bool = False) -> ir.Expr:
        """The value of an expression (arrays decayed to pointers). A void
        value (a call of a void function) is refused by the conversions that
        would use it, so `allow_void` only documents the statement contexts."""
        return self._rvalue(e)

    def _rvalue(self, e: A.Expr) -> ir.Expr:
        if isinstance(e, A.IntLit):
            try:
                value, t = int_literal_type(e.text)
            except OverflowError as err:
                raise self.error(f"integer literal '{e.text}' is {err}", e.loc) from None
            except ValueError:
                raise self.error(f"invalid integer literal '{e.text}'"
                                 + (" (invalid digit in octal constant)" if e.text.startswith("0") else ""),
                                 e.loc) from None
            return ir.Const(t, e.loc, value)
        if isinstance(e, A.FloatLit):
            text = e.text
            t = F64
            if text[-1] in "fF":
                t = F32
                text = text[:-1]
            elif text[-1] in "lL":
                raise self.error("long double is not supported", e.loc)
            value = float.fromhex(text) if text[:2] in ("0x", "0X") else float(text)
            return ir.Const(t, e.loc, const_value(value, t))
        if isinstance(e, A.CharLit):
            try:
                value, t = char_literal_type(e.text)
            except ValueError as err:
                raise self.error(f"{err} in character literal {e.text}", e.loc) from None
            return ir.Const(t, e.loc, value)
        if isinstance(e, A.BoolLit):
            return ir.Const(BOOL, e.loc, e.value)
        if isinstance(e, A.NullLit):
            c = ir.Const(I64, e.loc, 0)
            c.null = True
            return c
        if isinstance(e, A.StringLit):
            raise self.error("string literals are not supported in kernel code", e.loc)
        if isinstance(e, A.Name):
            return self.name_value(e)
        if isinstance(e, A.BinOp):
            return self.binary(e)
        if isinstance(e, A.LogicalOp):
            a = self.condition(e.a)
            b = self.operand(e.b, self.condition, a, e.op == "&&")
            return ir.Logical(BOOL, e.loc, "and" if e.op == "&&" else "or", a, b)
        if isinstance(e, A.AssignOp):
            return self.assignment(e)
        if isinstance(e, A.Ternary):
            return self.ternary(e)
        if isinstance(e, A.UnaryOp):
            return self.unary(e)
        if isinstance(e, A.ListInit):
            t = self.type_of_name(e.type_name).type
            if isinstance(t, ir.StructType):
                return self.load(self.lvalue(e))
            return self.list_init_value(e, t)
        if isinstance(e, A.CastExpr) and isinstance(self.type_of_name(e.type_name).type, ir.StructType):
            return self.load(self.lvalue(e))
        if isinstance(e, A.CastExpr):
            q = self.type_of_name(e.type_name)
            v = conversion_value(self, e.a, q.type, True, direct=True)
            v = self.rvalue(e.a, allow_void=True) if v is None else v
            if isinstance(q.type, ir.VoidType):
                if isinstance(v, ir.Intrinsic) and v.name.startswith("atomic"):
                    v.result_used = False
                return ir.Comma(ir.VOID, e.loc, [v]) if not isinstance(v.type, ir.VoidType) else v
            r = self.convert(v, q.type, e.loc, "cast", explicit=True)
            if is_ptr(q.type):
                if r is v:       # same type: a fresh node carries the cast's qualifiers
                    r = ir.Cast(q.type, e.loc, v)
                with_pq(r, (q.pconst, q.pvolatile), q.deep)
            return r
        if isinstance(e, A.SizeofType):
            q = self.type_of_name(e.type_name)
            return self.sizeof(q.type, e.loc)
        if isinstance(e, A.AlignofType):
            t = self.type_of_name(e.type_name).type
            self.sizeof(t, e.loc)       # the same types are refused
            while isinstance(t, ir.ArrayType):
                t = t.elem
            return ir.Const(ir.ULONG, e.loc, max(t.align, 1))     # a size_t
        if isinstance(e, A.SizeofExpr):
            t = self.type_only(e.a)
            return self.sizeof(t, e.loc)
        if isinstance(e, (A.Index, A.Member)):
            if isinstance(e, A.Member) and not e.arrow and isinstance(e.a, A.Name) \
                    and e.a.name in SPECIAL_VARS and self.lookup(e.a.name) is None:
                if e.name not in ("x", "y", "z"):
                    raise self.error(f"'{e.a.name}' has no member '{e.name}' (x, y or z)", e.loc)
                if self.const_only:
                    raise self.error("expression is not a constant", e.loc)
                return ir.Special(U32, e.a.loc, f"{SPECIAL_VARS[e.a.name]}.{e.name}")
            return self.load(self.lvalue(e))
        if isinstance(e, A.CallExpr):
            from .calls import lower_call
            return lower_call(self, e)
        if isinstance(e, A.CommaExpr):
            items = [self.effect(x) for x in e.items[:-1]] + [self.rvalue(e.items[-1])]
            return self._comma(items, e.loc)
        if isinstance(e, A.InitList):
            raise self.error("a brace-enclosed list is only allowed in an initialiser", e.loc)
        if isinstance(e, A.Lambda):
            raise self.error("lambdas are not supported (only as the operator of cg::reduce or a cg scan)", e.loc)
        raise self.error("unsupported expression", e.loc)

    def type_only(self, e: A.Expr) -> ir.Type:
        """Type of an expression for sizeof, without evaluating it."""
        saved = (len(self.temps), self.const_only)
        try:
            self.const_only = False
            if isinstance(e, A.Name):
                sym = self.lookup(e.name)
                if sym is not None and sym.kind == "var":
                    # a reference (or a struct parameter held by address) names the
                    # referenced object: C++ [expr.sizeof]/2, [temp.deduct.call]/3
                    return sym.obj.type.pointee if sym.byref else sym.obj.type
                if sym is not None and sym.kind == "global":
                    return sym.obj.type
                if sym is None and self.member_of_this(e) is not None:
                    e = self.member_of_this(e)      # a member array named bare: not decayed
            if isinstance(e, (A.Index, A.Member, A.UnaryOp)) and not (
                    isinstance(e, A.UnaryOp) and e.op not in ("*",)):
                try:
                    return self.lvalue(e).type
                except CompileError:
                    pass
            return self.rvalue(e).type
        finally:
            del self.temps[saved[0]:]
            self.const_only = saved[1]

    def sizeof(self, t: ir.Type, loc) -> ir.Expr:
        if isinstance(t, ir.VoidType):
            raise self.error("invalid application of 'sizeof' to type void", loc)
        if isinstance(t, ir.ArrayType) and t.count is None:
            raise self.error("invalid application of 'sizeof' to an array of unknown size", loc)
        return ir.Const(ir.ULONG, loc, t.size)     # a size_t: unsigned long (LP64)

    # names
    def name_value(self, e: A.Name) -> ir.Expr:
        if e.targs is not None:         # S<int>::n
            from .class_templates import static_member
            e = static_member(self, e)
        sym = self.lookup(e.name)
        if sym is None and not self.const_only and self.member_of_this(e) is not None:
            return self.load(self.lvalue(e))
        if sym is None:
            if e.name == "warpSize":
                if self.const_only:
                    raise self.error("warpSize is not a compile-time constant", e.loc)
                return ir.Special(I32, e.loc, "warpsize")
            if e.name in SPECIAL_VARS:
                raise self.error(f"'{e.name}' can only be used as {e.name}.x, .y or .z", e.loc)
            from .builtins import is_builtin_function
            if is_builtin_function(e.name):
                raise self.error(f"built-in function '{e.name}' must be called", e.loc)
            raise self.error(f"use of undeclared identifier '{e.name}'", e.loc)
        if sym.kind == "enum":
            return ir.Const(sym.qtype.type, e.loc, sym.obj)
        if sym.kind == "func":
            raise self.error("function pointers are not supported", e.loc)
        if sym.kind == "typedef":
            raise self.error(f"'{e.name}' is a type, not a value", e.loc)
        return self.load(self.lvalue(e))

    # lvalues
    def lvalue(self, e: A.Expr) -> LValue:
        if self.const_only and not isinstance(e, A.Name):
            raise self.error("expression is not a constant", e.loc)
        if isinstance(e, A.Name):
            if e.targs is not None:         # S<int>::n
                from .class_templates import static_member
                e = static_member(self, e)
            sym = self.lookup(e.name)
            if sym is None and self.member_of_this(e) is not None:
                return self.member(self.member_of_this(e))
            if sym is None:
                self.name_value(e)   # raises the right diagnostic, or is warpSize: a value, no object
                raise self.error(f"cannot assign to '{e.name}'", e.loc)
            if sym.kind == "enum":
                return LValue("const", sym.qtype.type, e.loc, value=ir.Const(sym.qtype.type, e.loc, sym.obj),
                              const=True)
            if sym.kind not in ("var", "global"):
                self.name_value(e)
            if self.const_only:
                if sym.value is not None:
                    return LValue("const", sym.qtype.type, e.loc, const=True,
                                  value=ir.Const(sym.qtype.type, e.loc, sym.value))
                raise self.error(f"'{e.name}' is not a constant", e.loc)
            q = sym.qtype
            if sym.kind == "global":
                gv = sym.obj
                addr = ir.GlobalRef(ir.PointerType(gv.type, gv.space), e.loc, gv)
                return LValue("mem", gv.type, e.loc, addr=addr, const=q.const, volatile=q.volatile,
                              pq=(q.pconst, q.pvolatile), deep=q.deep)
            var = sym.obj
            if sym.byref:
                return LValue("mem", q.type, e.loc, addr=ir.VarRef(var.type, e.loc, var), const=q.const,
                              volatile=q.volatile, pq=(q.pconst, q.pvolatile), deep=q.deep)
            if var.storage in ("reg",) or (var.storage == "param" and not isinstance(var.type, (ir.StructType, ir.ArrayType))):
                return LValue("reg", var.type, e.loc, var=var, const=q.const, volatile=q.volatile,
                              pq=(q.pconst, q.pvolatile), deep=q.deep)
            return LValue("mem", var.type, e.loc, addr=self.addr_of_var(var, e.loc, decay=False),
                          const=q.const, volatile=q.volatile or var.volatile, pq=(q.pconst, q.pvolatile),
                          deep=q.deep)
        if isinstance(e, A.UnaryOp) and e.op == "*":
            p = self.rvalue(e.a)
            if not is_ptr(p.type):
                raise self.error(f"indirection requires a pointer operand ('{tname(p.type)}' invalid)", e.loc)
            t = p.type.pointee
            if isinstance(t, ir.VoidType):
                raise self.error("cannot dereference a 'void *' pointer", e.loc)
            pc, pv = pq_of(p)
            pq, deep = below(deep_of(p))
            return LValue("mem", t, e.loc, addr=p, const=pc, volatile=pv, pq=pq, deep=deep)
        if isinstance(e, A.Index):
            return self.index(e)
        if isinstance(e, A.Member):
            return self.member(e)
        if isinstance(e, A.CallExpr):
            from .calls import lower_call
            v = lower_call(self, e, want_place=True)
            if isinstance(v, LValue):
                return v
            raise self.error("the result of this call is not assignable", e.loc)
        if isinstance(e, A.Ternary):
            # c ? s1 : s2 on structs: the place is one of two addresses
            c = self.condition(e.c)
            a, b = self.lvalue(e.a), self.lvalue(e.b)
            if a.kind == b.kind == "mem" and a.type == b.type and isinstance(a.type, ir.StructType):
                pt = ir.PointerType(a.type)
                pa = self.typed_addr(a.addr, a.type, e.loc)
                pb = self.typed_addr(b.addr, b.type, e.loc)
                pa = pa if pa.type == pt else ir.Cast(pt, e.loc, pa)
                pb = pb if pb.type == pt else ir.Cast(pt, e.loc, pb)
                return LValue("mem", a.type, e.loc, addr=ir.Cond(pt, e.loc, c, pa, pb),
                              const=a.const or b.const, volatile=a.volatile or b.volatile)
            raise self.error("a conditional expression is assignable only when both sides are structs", e.loc)
        if isinstance(e, (A.ListInit, A.CastExpr)):
            return self.struct_temporary(e)
        if isinstance(e, (A.BinOp, A.UnaryOp, A.AssignOp)):
            r = self.user_operator(e, want_place=True)
            if isinstance(r, LValue):
                return r
            if r is None and isinstance(e, A.BinOp):
                self.rvalue(e)      # the operator's own diagnostic (no operator for these operands)
        if isinstance(e, A.CommaExpr) or isinstance(e, A.AssignOp) or \
                (isinstance(e, A.UnaryOp) and e.op in ("pre++", "pre--")):
            raise self.error("this expression is not assignable here (not supported as an lvalue)", e.loc)
        raise self.error("expression is not assignable", e.loc)

    def addr_of_var(self, var: ir.Var, loc: Optional[ir.Loc] = None, decay: bool = True) -> ir.Expr:
        """AddrOf a memory-resident Var; arrays give a pointer to the element."""
        loc = loc or var.loc
        space = _SPACE_OF_STORAGE[var.storage]
        t = var.type
        pointee = t.elem if isinstance(t, ir.ArrayType) else t
        return ir.AddrOf(ir.PointerType(pointee, space), loc, var)

    def load(self, lv: LValue) -> ir.Expr:
        t = lv.type
        if lv.kind == "const":
            return lv.value
        if lv.kind == "reg":
            return with_pq(ir.VarRef(t, lv.loc, lv.var), lv.pq, lv.deep)
        if lv.kind == "vecelem":
            vec = ir.VarRef(lv.var.type, lv.loc, lv.var)
            return ir.Extract(t, lv.loc, vec, lv.index)
        # memory
        addr = lv.addr
        if isinstance(t, ir.ArrayType):
            # decay: pointer to the first element
            elem = t.elem
            space = addr.type.space if is_ptr(addr.type) else "generic"
            if is_ptr(addr.type) and addr.type.pointee == elem:
                return with_pq(addr, (lv.const or lv.pq[0], lv.volatile or lv.pq[1]), lv.deep)
            return with_pq(ir.Cast(ir.PointerType(elem, space), lv.loc, addr), (lv.const, lv.volatile), lv.deep)
        if isinstance(t, ir.StructType):
            return ir.Load(t, lv.loc, addr, lv.volatile)
        return with_pq(ir.Load(t, lv.loc, self.typed_addr(addr, t, lv.loc), lv.volatile), lv.pq, lv.deep)

    def typed_addr(self, addr: ir.Expr, t: ir.Type, loc) -> ir.Expr:
        """`addr` as a pointer to t (AddrOf of an array var points to its element)."""
        if is_ptr(addr.type) and addr.type.pointee == t:
            return addr
        space = addr.type.space if is_ptr(addr.type) else "generic"
        return ir.Cast(ir.PointerType(t, space), loc, addr)

    def store(self, lv: LValue, value: ir.Expr, loc) -> ir.Expr:
        if lv.kind == "const":
            raise self.error("expression is not assignable", loc)
        if lv.kind == "reg":
            return ir.Assign(lv.type, loc, lv.var, value)
        if lv.kind == "vecelem":
            vt = lv.var.type
            elems = [value if i == lv.index else ir.Extract(vt.elem, loc, ir.VarRef(vt, loc, lv.var), i)
                     for i in range(vt.count)]
            if has_side_effects(value):
                tmp = self.temp(vt.elem, loc)
                elems[lv.index] = ir.VarRef(vt.elem, loc, tmp)
                return ir.Comma(vt.elem, loc, [ir.Assign(vt.elem, loc, tmp, value),
                                               ir.Assign(vt, loc, lv.var, ir.MakeVector(vt, loc, elems)),
                                               ir.VarRef(vt.elem, loc, tmp)])
            return ir.Comma(vt.elem, loc, [ir.Assign(vt, loc, lv.var, ir.MakeVector(vt, loc, elems)),
                                           ir.Extract(vt.elem, loc, ir.VarRef(vt, loc, lv.var), lv.index)])
        return ir.Store(lv.type, loc, self.typed_addr(lv.addr, lv.type, loc), value, lv.volatile)

    def check_assignable(self, lv: LValue, loc) -> None:
        if lv.kind == "const":
            raise self.error("expression is not assignable", loc)
        if isinstance(lv.type, ir.ArrayType):
            raise self.error("cannot assign to an array", loc)
        if lv.kind == "mem" and is_ptr(lv.addr.type) and lv.addr.type.space == "constant":
            raise self.error("cannot write to __constant__ memory from device code", loc)
        if lv.const:
            raise self.error("cannot assign to a const variable", loc)

    def index(self, e: A.Index) -> LValue:
        r = self.user_operator(e, want_place=True)
        if r is not None:
            return r if isinstance(r, LValue) else LValue("const", r.type, e.loc, value=r, const=True)
        a = operand_value(self, e.a)
        i = operand_value(self, e.index)
        if not is_ptr(a.type) and is_ptr(i.type):
            a, i = i, a
        if isinstance(a.type, ir.VectorType):
            raise self.error("vector types cannot be indexed; use .x, .y, .z, .w", e.loc)
        if not is_ptr(a.type):
            raise self.error(f"subscripted value is not an array or pointer ('{tname(a.type)}')", e.a.loc)
        if not is_int(i.type) or ir.scoped_enum(i.type) is not None:
            raise self.error(f"array subscript is not an integer ('{tname(i.type)}')", e.index.loc)
        t = a.type.pointee
        if isinstance(t, ir.VoidType):
            raise self.error("cannot subscript a 'void *' pointer", e.loc)
        addr = self.ptr_offset(a, i, e.loc)
        pc, pv = pq_of(a)
        pq, deep = below(deep_of(a))
        return LValue("mem", t, e.loc, addr=addr, const=pc, volatile=pv,
                      pq=(pc or pq[0], pv or pq[1]) if isinstance(t, ir.ArrayType) else pq, deep=deep)

    def ptr_offset(self, p: ir.Expr, i: ir.Expr, loc, negate: bool = False) -> ir.Expr:
        """PtrAdd(p, i * sizeof(*p)) with an I64 byte offset."""
        size = p.type.pointee.size
        iv = fold(i)
        if iv is not None:
            off = int(iv) * size * (-1 if negate else 1)
            if off == 0:
                return p
            r = ir.PtrAdd(p.type, loc, p, ir.Const(I64, loc, const_value(off, I64)))
        else:
            off = self.convert(i, I64, loc)
            if size != 1:
                off = ir.Binary(I64, loc, "mul", off, ir.Const(I64, loc, size))
            if negate:
                off = ir.Unary(I64, loc, "neg", off)
            r = ir.PtrAdd(p.type, loc, p, off)
        return with_pq(r, pq_of(p), deep_of(p))

    def member(self, e: A.Member) -> LValue:
        if e.arrow:
            p = self.rvalue(e.a)
            if not is_ptr(p.type):
                raise self.error(f"member reference type '{tname(p.type)}' is not a pointer; use '.'", e.loc)
            st = p.type.pointee
            pc, pv = pq_of(p)
            base = LValue("mem", st, e.loc, addr=p, const=pc, volatile=pv)   # a struct: no pointee quals
        else:
            if isinstance(e.a, A.Name) and e.a.name in SPECIAL_VARS and self.lookup(e.a.name) is None:
                raise self.error(f"cannot assign to '{e.a.name}.{e.name}'", e.loc)
            try:
                base = self.lvalue(e.a)
            except CompileError:
                v = self.rvalue(e.a)
                if isinstance(v.type, ir.VectorType):
                    return LValue("const", v.type.elem, e.loc, value=self.vector_member(v, e), const=True)
                raise
            st = base.type
        if isinstance(st, ir.VectorType):
            idx = self.vector_index(st, e)
            if base.kind == "reg":
                return LValue("vecelem", st.elem, e.loc, var=base.var, index=idx, const=base.const)
            if base.kind == "const":
                return LValue("const", st.elem, e.loc, value=ir.Extract(st.elem, e.loc, base.value, idx),
                              const=True)
            addr = self.typed_addr(base.addr, st, e.loc)
            if idx:
                addr = ir.PtrAdd(addr.type, e.loc, addr, ir.Const(I64, e.loc, idx * st.elem.size))
            return LValue("mem", st.elem, e.loc, addr=self.typed_addr(addr, st.elem, e.loc),
                          const=base.const, volatile=base.volatile)
        if not isinstance(st, ir.StructType):
            op = "->" if e.arrow else "."
            if not e.arrow and is_ptr(st) and isinstance(st.pointee, (ir.StructType, ir.VectorType)):
                raise self.error(f"member reference type '{tname(st)}' is a pointer; use '->'", e.loc)
            raise self.error(f"member reference base type '{tname(st)}' is not a struct (in '{op}{e.name}')", e.loc)
        try:
            f = st.field(e.name)
        except KeyError:
            raise self.error(f"no member named '{e.name}' in '{st}'", e.loc) from None
        addr = self.typed_addr(base.addr, st, e.loc)
        if f.offset:
            addr = ir.PtrAdd(addr.type, e.loc, addr, ir.Const(I64, e.loc, f.offset))
        fq = base.const
        pq, deep = self.ck.member_quals.get((st, e.name), ((False, False), ()))
        if isinstance(f.type, ir.ArrayType):
            pq = (fq or pq[0], base.volatile or pq[1])
        return LValue("mem", f.type, e.loc, addr=self.typed_addr(addr, f.type, e.loc), const=fq,
                      volatile=base.volatile, pq=pq, deep=deep)

    def vector_index(self, vt: ir.VectorType, e: A.Member) -> int:
        names = "xyzw"
        if len(e.name) != 1 or e.name not in names[:vt.count]:
            raise self.error(f"'{vt.name}' has no member '{e.name}'", e.loc)
        return names.index(e.name)

    def vector_member(self, v: ir.Expr, e: A.Member) -> ir.Expr:
        return ir.Extract(v.type.elem, e.loc, v, self.vector_index(v.type, e))

    def struct_copy(self, dst: ir.Expr, e: A.Expr, t: ir.StructType, loc) -> ir.Expr:
        """dst = e for a struct: MemCopy from an lvalue, or a Store of a
        struct-valued Call (the value of a device function returning a struct)."""
        return ir.MemCopy(ir.VOID, loc, dst, self.rvalue_struct_addr(e, t), t.size)

    def rvalue_struct_addr(self, e: A.Expr, t: ir.StructType) -> ir.Expr:
        """Address of a struct-valued expression (for MemCopy)."""
        lv = self.lvalue(e)
        if lv.type != t:
            raise self.error(f"cannot initialise '{t}' from '{tname(lv.type)}'", e.loc)
        return lv.addr

    # conversions
    def convert(self, v: ir.Expr, t: ir.Type, loc, what: str = "convert", explicit: bool = False) -> ir.Expr:
        """Implicit (or with `explicit`, cast) conversion of v to t."""
        s = v.type
        if ir.scoped_enum(s) is not None or ir.scoped_enum(t) is not None:
            if ir.scoped_enum(s) == ir.scoped_enum(t):
                return v
            if not explicit:
                raise self.error(f"no implicit conversion from '{tname(s)}' to '{tname(t)}' (a scoped enum "
                                 f"converts only with a cast)", loc)
            v = self.unscoped(v)
            if ir.scoped_enum(t) is not None:
                return replace(self.convert(v, t.underlying, loc, what, explicit), type=t)
            s = v.type
        if s == t:
            return v
        if isinstance(t, ir.VoidType):
            return v
        if isinstance(s, ir.VoidType):
            raise self.error("a void value cannot be used", loc)
        if is_arith(t) and is_arith(s):
            if isinstance(v, ir.Const):
                return ir.Const(t, v.loc, const_value(v.value, t))
            if t == BOOL:
                return self.to_bool(v, loc)
            return ir.Cast(t, loc, v)
        if is_ptr(t):
            if is_ptr(s):
                if not explicit:
                    if isinstance(s.pointee, ir.VoidType) and not isinstance(t.pointee, ir.VoidType):
                        raise self.error(f"cannot convert '{tname(s)}' to '{tname(t)}' without a cast", loc)
                    if not isinstance(t.pointee, ir.VoidType) and strip_spaces(s.pointee) != strip_spaces(t.pointee):
                        raise self.error(f"cannot convert '{tname(s)}' to '{tname(t)}' without a cast", loc)
                return with_pq(ir.Cast(t, loc, v), pq_of(v), deep_of(v))
            if is_int(s):
                if explicit or (isinstance(v, ir.Const) and v.value == 0 and s != BOOL):
                    return ir.Cast(t, loc, v)
                raise self.error(f"cannot convert '{tname(s)}' to '{tname(t)}' without a cast", loc)
        if is_int(t) and is_ptr(s):
            if t == BOOL:
                return self.to_bool(v, loc)
            if explicit:
                return ir.Cast(t, loc, v)
            raise self.error(f"cannot convert '{tname(s)}' to '{tname(t)}' without a cast", loc)
        if isinstance(t, ir.StructType) and s == t:
            return v
        if explicit:
            raise self.error(f"invalid cast from '{tname(s)}' to '{tname(t)}'", loc)
        raise self.error(f"cannot {what} '{tname(t)}' from '{tname(s)}'" if what == "initialise"
                         else f"cannot convert '{tname(s)}' to '{tname(t)}'", loc)

    def unscoped(self, v: ir.Expr) -> ir.Expr:
        """A scoped enum value as its underlying integer (other values unchanged)."""
        return replace(v, type=v.type.underlying) if ir.scoped_enum(v.type) is not None else v

    def to_bool(self, v: ir.Expr, loc) -> ir.Expr:
        t = v.type
        if ir.scoped_enum(t) is not None:
            raise self.error(f"value of type '{tname(t)}' is not contextually convertible to 'bool'", loc)
        if t == BOOL:
            return v
        if isinstance(v, ir.Const) and is_arith(t):
            return ir.Const(BOOL, v.loc, bool(v.value))
        if is_arith(t):
            return ir.Binary(BOOL, loc, "ne", v, ir.Const(t, loc, const_value(0, t)))
        if is_ptr(t):
            return ir.Binary(BOOL, loc, "ne", v, ir.Cast(t, loc, ir.Const(I64, loc, 0)))
        raise self.error(f"value of type '{tname(t)}' is not contextually convertible to 'bool'", loc)

    def arith(self, v: ir.Expr, loc, what: str) -> ir.Expr:
        if not is_arith(v.type):
            raise self.error(f"invalid operand of type '{tname(v.type)}' to {what}", loc)
        return v

    # operators
    def user_operator(self, e: A.Expr, want_place: bool = False):
        """The call of a user-defined operator for `e` when an operand is a
        struct or vector and one is declared (operators.py), else None."""
        from .operators import operands, operator_call
        op, args = operands(e)
        if op is None or "operator" + op not in self.ck.operators:
            return None
        return operator_call(self, op, args, e.loc, want_place)

    def binary(self, e: A.BinOp) -> ir.Expr:
        r = self.user_operator(e)
        if r is not None:
            return r
        a = operand_value(self, e.a)
        b = operand_value(self, e.b)
        return self.binary_values(e.op, a, b, e.loc)

    def binary_values(self, op: str, a: ir.Expr, b: ir.Expr, loc) -> ir.Expr:
        name = _BINOPS[op]
        ta, tb = a.type, b.type
        if ir.scoped_enum(ta) is not None or ir.scoped_enum(tb) is not None:
            if name not in _CMP or ir.scoped_enum(ta) != ir.scoped_enum(tb):
                raise self.error(f"invalid operands to binary '{op}' ('{tname(ta)}' and '{tname(tb)}'): a scoped "
                                 f"enum only compares with its own type", loc)
            a, b = self.unscoped(a), self.unscoped(b)
            ta, tb = a.type, b.type
        if op in ("+", "-") and (is_ptr(ta) or is_ptr(tb)):
            return self.pointer_arith(op, a, b, loc)
        if name in _CMP and (is_ptr(ta) or is_ptr(tb)):
            return self.pointer_compare(name, a, b, loc)
        for x in (a, b):
            if not is_arith(x.type):
                raise self.error(f"invalid operands to binary '{op}' ('{tname(ta)}' and '{tname(tb)}')", loc)
        if name in ("shl", "shr"):
            if not (is_int(ta) and is_int(tb)):
                raise self.error(f"invalid operands to binary '{op}' ('{tname(ta)}' and '{tname(tb)}')", loc)
            t = promote(ta)
            a2 = self.convert(a, t, loc)
            b2 = self.convert(b, promote(tb), loc)
            return self._fold_binary(ir.Binary(t, loc, name, a2, b2))
        if name in ("rem", "and", "or", "xor") and not (is_int(ta) and is_int(tb)):
            raise self.error(f"invalid operands to binary '{op}' ('{tname(ta)}' and '{tname(tb)}')", loc)
        t = usual_arithmetic(ta, tb)
        a2 = self.convert(a, t, loc)
        b2 = self.convert(b, t, loc)
        rt = BOOL if name in _CMP else t
        return self._fold_binary(ir.Binary(rt, loc, name, a2, b2))

    def _fold_binary(self, b: ir.Binary) -> ir.Expr:
        if isinstance(b.a, ir.Const) and isinstance(b.b, ir.Const):
            v = fold(b)
            if v is not None:
                return ir.Const(b.type, b.loc, v)
        return b

    def pointer_arith(self, op: str, a: ir.Expr, b: ir.Expr, loc) -> ir.Expr:
        ta, tb = a.type, b.type
        if op == "-" and is_ptr(ta) and is_ptr(tb):
            if strip_spaces(ta.pointee) != strip_spaces(tb.pointee):
                raise self.error(f"'{tname(ta)}' and '{tname(tb)}' are not pointers to compatible types", loc)
            size = ta.pointee.size
            if size == 0:
                raise self.error("arithmetic on a pointer to void", loc)
            diff = ir.Binary(I64, loc, "sub", ir.Cast(I64, loc, a), ir.Cast(I64, loc, b))
            if size == 1:     # a ptrdiff_t: long (LP64)
                return ir.Binary(ir.LONG, loc, "sub", diff.a, diff.b)
            return ir.Binary(ir.LONG, loc, "div", diff, ir.Const(I64, loc, size))
        if is_ptr(tb):
            if op == "-":
                raise self.error("cannot subtract a pointer from an integer", loc)
            a, b = b, a
            ta, tb = tb, ta
        if not is_int(tb) or ir.scoped_enum(tb) is not None:
            raise self.error(f"invalid operands to binary '{op}' ('{tname(ta)}' and '{tname(tb)}')", loc)
        if isinstance(ta.pointee, (ir.VoidType,)) or ta.pointee.size == 0:
            raise self.error("arithmetic on a pointer to void or to an incomplete type", loc)
        return self.ptr_offset(a, b, loc, negate=(op == "-"))

    def pointer_compare(self, name: str, a: ir.Expr, b: ir.Expr, loc) -> ir.Expr:
        ta, tb = a.type, b.type
        if is_ptr(ta) and is_ptr(tb):
            if ta != tb:
                g = ir.PointerType(ta.pointee if strip_spaces(ta.pointee) == strip_spaces(tb.pointee) else ir.VOID)
                a = ir.Cast(g, loc, a) if ta != g else a
                b = ir.Cast(g, loc, b) if tb != g else b
            return ir.Binary(BOOL, loc, name, a, b)
        p, i = (a, b) if is_ptr(ta) else (b, a)
        if isinstance(i, ir.Const) and is_int(i.type) and i.value == 0:
            null = ir.Cast(p.type, loc, ir.Const(I64, loc, 0))
            return ir.Binary(BOOL, loc, name, a if p is a else null, null if p is a else b)
        raise self.error(f"comparison between pointer and integer ('{tname(ta)}' and '{tname(tb)}')", loc)

    def unary(self, e: A.UnaryOp) -> ir.Expr:
        op = e.op
        if op in ("pre++", "pre--"):
            return self.incdec(e.a, op[-2:], e.loc, post=False)
        if op in ("post++", "post--"):
            return self.incdec(e.a, op[-2:], e.loc, post=True)
        if op == "&":
            return self.address_of(e)
        if op == "*":
            return self.load(self.lvalue(e))
        r = self.user_operator(e)
        if r is not None:
            return r
        if op == "!":
            b = self.condition(e.a)
            if isinstance(b, ir.Const):
                return ir.Const(BOOL, e.loc, not b.value)
            return ir.Unary(BOOL, e.loc, "lnot", b)
        v = operand_value(self, e.a)
        if op in ("-", "+", "~"):
            if ir.scoped_enum(v.type) is not None:
                raise self.error(f"invalid argument type '{tname(v.type)}' to unary '{op}'", e.loc)
            if op == "~" and not is_int(v.type):
                raise self.error(f"invalid argument type '{tname(v.type)}' to unary '~'", e.loc)
            if not is_arith(v.type):
                raise self.error(f"invalid argument type '{tname(v.type)}' to unary '{op}'", e.loc)
            t = promote(v.type)
            v = self.convert(v, t, e.loc)
            if op == "+":
                return v
            r = ir.Unary(t, e.loc, "neg" if op == "-" else "bitnot", v)
            if isinstance(v, ir.Const):
                fv = fold(r)
                if fv is not None:
                    return ir.Const(t, e.loc, fv)
            return r
        raise self.error(f"unsupported operator '{op}'", e.loc)

    def address_of(self, e: A.UnaryOp) -> ir.Expr:
        if isinstance(e.a, A.Name):
            sym = self.lookup(e.a.name)
            if sym is not None and sym.kind == "func":
                raise self.error("function pointers are not supported", e.loc)
            if sym is None and e.a.name == "warpSize":
                raise self.error("cannot take the address of 'warpSize'", e.loc)
        if isinstance(e.a, A.Member) and not e.a.arrow and isinstance(e.a.a, A.Name) and \
                e.a.a.name in SPECIAL_VARS and self.lookup(e.a.a.name) is None:
            raise self.error(f"cannot take the address of '{e.a.a.name}.{e.a.name}'", e.loc)
        lv = self.lvalue(e.a)
        if lv.kind == "reg":
            # only possible for params of a declaration lowered without the pre-pass
            raise self.error("cannot take the address of this value", e.loc)
        if lv.kind in ("const", "vecelem"):
            raise self.error("cannot take the address of an rvalue", e.loc)
        t = lv.type
        addr = lv.addr
        space = addr.type.space if is_ptr(addr.type) else "generic"
        want = ir.PointerType(t, space)
        if addr.type != want:
            addr = ir.Cast(want, e.loc, addr)
        return with_pq(addr, (lv.const, lv.volatile), (lv.pq,) + lv.deep)

    def assignment(self, e: A.AssignOp) -> ir.Expr:
        r = self.user_operator(e, want_place=True)
        if isinstance(r, LValue):   # a struct result is there for its effect or its place
            return r.addr if isinstance(r.type, ir.StructType) else self.load(r)
        if r is not None:
            return r
        lv = self.lvalue(e.target)
        self.check_assignable(lv, e.loc)
        t = lv.type
        if e.op == "=":
            if isinstance(t, ir.StructType):
                return self.struct_copy(lv.addr, e.value, t, e.loc)
            v = conversion_value(self, e.value, t, lv.pq[0])
            v = self.convert(self.rvalue(e.value) if v is None else v, t, e.value.loc, "assign")
            self.check_qual_drop(v, t, e.value.loc, lv.pq[0])
            return self.store(lv, v, e.loc)
        op = e.op[:-1]
        rhs = operand_value(self, e.value)
        return self.read_modify_write(lv, lambda cur: self.binary_values(op, cur, rhs, e.loc), e.loc)

    def check_qual_drop(self, v: ir.Expr, t: ir.Type, loc, target_pconst: bool) -> None:
        """C++ forbids dropping const from a pointee implicitly."""
        if is_ptr(t) and pq_of(v)[0] and not target_pconst:
            raise self.error(f"cannot convert 'const {tname(t)}' to '{tname(t)}': the conversion discards const", loc)

    def read_modify_write(self, lv: LValue, compute, loc, post: bool = False) -> ir.Expr:
        """lv = compute(lv); value: the new value, or the old one if `post`."""
        t = lv.type
        if lv.kind == "reg":
            cur = self.load(lv)
            new = self.convert(compute(cur), t, loc, "assign")
            if not post:
                return ir.Assign(t, loc, lv.var, new)
            old = self.temp(t, loc)
            return ir.Comma(t, loc, [ir.Assign(t, loc, old, self.load(lv)),
                                     ir.Assign(t, loc, lv.var, self.convert(compute(ir.VarRef(t, loc, old)), t, loc)),
                                     ir.VarRef(t, loc, old)])
        if lv.kind == "vecelem":
            cur = self.load(lv)
            if not post:
                return self.store(lv, self.convert(compute(cur), t, loc), loc)
            old = self.temp(t, loc)
            return ir.Comma(t, loc, [ir.Assign(t, loc, old, cur),
                                     self.store(lv, self.convert(compute(ir.VarRef(t, loc, old)), t, loc), loc),
                                     ir.VarRef(t, loc, old)])
        # memory: evaluate the address once
        prefix = []
        addr = self.typed_addr(lv.addr, t, loc)
        if has_side_effects(addr) or not cheap_address(addr):
            pt = addr.type
            tmp = self.temp(pt, loc)
            prefix.append(ir.Assign(pt, loc, tmp, addr))
            addr = ir.VarRef(pt, loc, tmp)
        cur = ir.Load(t, loc, clone(addr), lv.volatile)
        if not post:
            new = self.convert(compute(cur), t, loc, "assign")
            st = ir.Store(t, loc, clone(addr), new, lv.volatile)
            return ir.Comma(t, loc, prefix + [st]) if prefix else st
        old = self.temp(t, loc)
        items = prefix + [ir.Assign(t, loc, old, cur),
                          ir.Store(t, loc, clone(addr), self.convert(compute(ir.VarRef(t, loc, old)), t, loc),
                                   lv.volatile),
                          ir.VarRef(t, loc, old)]
        return ir.Comma(t, loc, items)

    def incdec(self, target: A.Expr, op: str, loc, post: bool) -> ir.Expr:
        if "operator" + op in self.ck.operators:      # a struct's operator++ / operator--
            r = self.user_operator(A.UnaryOp(loc, ("post" if post else "pre") + op, target), want_place=True)
            if isinstance(r, LValue):   # a struct result is there for its effect or its place
                return r.addr if isinstance(r.type, ir.StructType) else self.load(r)
            if r is not None:
                return r
        lv = self.lvalue(target)
        self.check_assignable(lv, loc)
        t = lv.type
        if not (is_arith(t) or is_ptr(t)) or ir.scoped_enum(t) is not None:
            raise self.error(f"cannot increment or decrement a value of type '{tname(t)}'", loc)
        if t == BOOL:
            raise self.error("incrementing or decrementing a bool is not allowed in C++17", loc)
        one = ir.Const(I32, loc, 1)
        bop = "+" if op == "++" else "-"
        return self.read_modify_write(lv, lambda cur: self.binary_values(bop, cur, one, loc), loc, post=post)

    def operand(self, e: A.Expr, lower, cond: ir.Expr, taken_when: bool) -> ir.Expr:
        """An operand of ?:, && or || that runs when `cond` is `taken_when`; in a
        constant expression whose condition is known, an operand not taken is
        not evaluated, only typed (a constexpr call in it is not run: C++
        [expr.cond], constexpr_eval.py)."""
        skip = self.const_only and isinstance(cond, ir.Const) and bool(cond.value) != taken_when
        self.ck.unevaluated = getattr(self.ck, "unevaluated", 0) + skip
        try:
            return lower(e)
        finally:
            self.ck.unevaluated -= skip

    def ternary(self, e: A.Ternary) -> ir.Expr:
        c = self.condition(e.c)
        a = self.operand(e.a, self.rvalue, c, True)
        b = self.operand(e.b, self.rvalue, c, False)
        ta, tb = a.type, b.type
        if is_arith(ta) and is_arith(tb):
            t = BOOL if ta == BOOL and tb == BOOL else usual_arithmetic(ta, tb)
        elif ta == tb:
            t = ta
        elif is_ptr(ta) and is_ptr(tb):
            if strip_spaces(ta.pointee) == strip_spaces(tb.pointee):
                t = ir.PointerType(ta.pointee)
            elif isinstance(ta.pointee, ir.VoidType) or isinstance(tb.pointee, ir.VoidType):
                t = ir.PointerType(ir.VOID)
            else:
                raise self.error(f"incompatible operand types ('{tname(ta)}' and '{tname(tb)}')", e.loc)
        elif is_ptr(ta) and isinstance(b, ir.Const) and b.value == 0:
            t = ta
        elif is_ptr(tb) and isinstance(a, ir.Const) and a.value == 0:
            t = tb
        else:
            raise self.error(f"incompatible operand types ('{tname(ta)}' and '{tname(tb)}')", e.loc)
        a = self.convert(a, t, e.a.loc, explicit=is_ptr(t))
        b = self.convert(b, t, e.b.loc, explicit=is_ptr(t))
        r = ir.Cond(t, e.loc, c, a, b)
        if is_ptr(t):
            pa, pb = pq_of(a), pq_of(b)
            deep = tuple((x[0] or y[0], x[1] or y[1]) for x, y in
                         itertools.zip_longest(deep_of(a), deep_of(b), fillvalue=(False, False)))
            with_pq(r, (pa[0] or pb[0], pa[1] or pb[1]), deep)
        return r
