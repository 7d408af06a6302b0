"""Moves every device-function call and every __syncthreads to statement level.

The warp function can only suspend (barrier, full trace buffer) and inline a
call between statements, because all thread state that survives a suspension
lives in the frame and expression temporaries do not. This pass rewrites an
expression that contains a call into statements that evaluate its operands,
left to right, into fresh register temporaries, so afterwards a call appears
only as ``ExprStmt(Call)`` or ``ExprStmt(Assign(tmp, Call))`` with call-free
arguments. Short-circuit ``&&``/``||`` and ``?:`` that contain calls become
``If`` statements, which keeps their per-lane evaluation (side effects).
"""
from __future__ import annotations

from dataclasses import replace

from isa import ir
from isa.diagnostics import CompileError

_CHILDREN = {
    ir.Load: ("addr",), ir.Unary: ("a",), ir.Binary: ("a", "b"), ir.Cast: ("a",),
    ir.PtrAdd: ("ptr", "offset"), ir.Store: ("addr", "value"), ir.MemCopy: ("dst", "src"),
    ir.Extract: ("vec",), ir.Assign: ("value",),
}
_LIST_CHILDREN = {ir.MakeVector: "elems", ir.Intrinsic: "args", ir.Call: "args"}
_TRIVIAL = (ir.Const, ir.VarRef, ir.GlobalRef, ir.AddrOf, ir.Special)


def is_suspending(e: ir.Expr) -> bool:
    """A call (inlined: may contain barriers) or a block barrier."""
    return isinstance(e, ir.Call) or (isinstance(e, ir.Intrinsic) and e.name == "syncthreads")


def children(e: ir.Expr) -> list:
    """Sub-expressions of `e` in C evaluation order."""
    if isinstance(e, ir.Logical):
        return [e.a, e.b]
    if isinstance(e, ir.Cond):
        return [e.c, e.a, e.b]
    if isinstance(e, ir.Comma):
        return list(e.exprs)
    for cls, names in _CHILDREN.items():
        if isinstance(e, cls):
            return [getattr(e, n) for n in names]
    for cls, name in _LIST_CHILDREN.items():
        if isinstance(e, cls):
            return list(getattr(e, name))
    return []


class CallHoister:
    """Rewrites one function body; create one per function."""

    def __init__(self) -> None:
        self._memo: dict = {}
        self._n = 0

    def contains_call(self, e) -> bool:
        if e is None:
            return False
        key = id(e)
        hit = self._memo.get(key)
        if hit is None:
            r = is_suspending(e) or any(self.contains_call(c) for c in children(e))
            self._memo[key] = (r, e)    # keeping e alive keeps its id unique
            return r
        return hit[0]

    # ------------------------------------------------------------ helpers
    def _temp(self, t, loc) -> ir.Var:
        self._n += 1
        return ir.Var(f"__tmp{self._n}", t, "reg", loc)

    def _to_temp(self, e: ir.Expr, stmts: list) -> ir.Expr:
        if isinstance(e, _TRIVIAL) or isinstance(e.type, ir.VoidType):
            if isinstance(e.type, ir.VoidType) and not isinstance(e, _TRIVIAL):
                stmts.append(ir.ExprStmt(e.loc, e))
                return ir.Const(ir.VOID, e.loc, 0)
            return e
        if isinstance(e.type, (ir.StructType, ir.ArrayType)):
            raise CompileError("a function call inside a struct-valued expression is not supported",
                               e.loc)
        t = self._temp(e.type, e.loc)
        stmts.append(ir.Decl(e.loc, t, e))
        return ir.VarRef(e.type, e.loc, t)

    # -------------------------------------------------------- expressions
    def expr(self, e: ir.Expr):
        """Return (statements to run first, call-free replacement of e)."""
        if not self.contains_call(e):
            return [], e
        stmts: list = []
        if isinstance(e, ir.Call) or (isinstance(e, ir.Intrinsic) and e.name == "syncthreads"):
            args = self._operands(e.args, stmts)
            node = replace(e, args=args)
            if isinstance(e.type, ir.VoidType):
                stmts.append(ir.ExprStmt(e.loc, node))
                return stmts, ir.Const(ir.VOID, e.loc, 0)
            t = self._temp(e.type, e.loc)
            stmts.append(ir.Decl(e.loc, t, None))
            stmts.append(ir.ExprStmt(e.loc, ir.Assign(e.type, e.loc, t, node)))
            return stmts, ir.VarRef(e.type, e.loc, t)
        if isinstance(e, ir.Logical):
            sa, a = self.expr(e.a)
            stmts += sa
            t = self._temp(ir.BOOL, e.loc)
            stmts.append(ir.Decl(e.loc, t, a))
            sb, b = self.expr(e.b)
            body = ir.Block(e.loc, sb + [ir.ExprStmt(e.loc, ir.Assign(ir.BOOL, e.loc, t, b))])
            tv = ir.VarRef(ir.BOOL, e.loc, t)
            cond = tv if e.op == "and" else ir.Unary(ir.BOOL, e.loc, "lnot", tv)
            stmts.append(ir.If(e.loc, cond, body, None))
            return stmts, ir.VarRef(ir.BOOL, e.loc, t)
        if isinstance(e, ir.Cond):
            sc, c = self.expr(e.c)
            stmts += sc
            c = self._to_temp(c, stmts)
            sa, a = self.expr(e.a)
            sb, b = self.expr(e.b)
            if isinstance(e.type, ir.VoidType):
                then = ir.Block(e.loc, sa + [ir.ExprStmt(e.loc, a)])
                other = ir.Block(e.loc, sb + [ir.ExprStmt(e.loc, b)])
                stmts.append(ir.If(e.loc, c, then, other))
                return stmts, ir.Const(ir.VOID, e.loc, 0)
            t = self._temp(e.type, e.loc)
            stmts.append(ir.Decl(e.loc, t, None))
            then = ir.Block(e.loc, sa + [ir.ExprStmt(e.loc, ir.Assign(e.type, e.loc, t, a))])
            other = ir.Block(e.loc, sb + [ir.ExprStmt(e.loc, ir.Assign(e.type, e.loc, t, b))])
            stmts.append(ir.If(e.loc, c, then, other))
            return stmts, ir.VarRef(e.type, e.loc, t)
        if isinstance(e, ir.Comma):
            for sub in e.exprs[:-1]:
                s, x = self.expr(sub)
                stmts += s
                stmts.append(ir.ExprStmt(sub.loc, x))
            s, last = self.expr(e.exprs[-1])
            return stmts + s, last
        for cls, names in _CHILDREN.items():
            if isinstance(e, cls):
                vals = self._operands([getattr(e, n) for n in names], stmts)
                return stmts, replace(e, **dict(zip(names, vals)))
        for cls, name in _LIST_CHILDREN.items():
            if isinstance(e, cls):
                return stmts, replace(e, **{name: self._operands(getattr(e, name), stmts)})
        raise CompileError(f"internal: cannot hoist calls out of {type(e).__name__}", e.loc)

    def _operands(self, exprs: list, stmts: list) -> list:
        """Linearise operands in order; an operand followed by one that
        contains a call is saved to a temporary first (keeps C's order)."""
        out = []
        for i, x in enumerate(exprs):
            s, v = self.expr(x)
            stmts += s
            if any(self.contains_call(y) for y in exprs[i + 1:]):
                v = self._to_temp(v, stmts)
            out.append(v)
        return out

    # --------------------------------------------------------- statements
    def block(self, s) -> ir.Stmt:
        out = self.stmt(s)
        return out[0] if len(out) == 1 else ir.Block(s.loc, out)

    def stmt(self, s) -> list:
        if s is None:
            return []
        if isinstance(s, ir.Block):
            out = []
            for x in s.stmts:
                out += self.stmt(x)
            return [ir.Block(s.loc, out)]
        if isinstance(s, ir.ExprStmt):
            e = s.expr
            if is_suspending(e):
                st: list = []
                args = self._operands(e.args, st)
                return st + [ir.ExprStmt(s.loc, replace(e, args=args))]
            if isinstance(e, ir.Assign) and isinstance(e.value, ir.Call):
                st = []
                args = self._operands(e.value.args, st)
                return st + [ir.ExprStmt(s.loc, replace(e, value=replace(e.value, args=args)))]
            st, x = self.expr(e)
            return st + [ir.ExprStmt(s.loc, x)]
        if isinstance(s, ir.Decl):
            st, x = self.expr(s.init) if s.init is not None else ([], None)
            return st + [ir.Decl(s.loc, s.var, x)]
        if isinstance(s, ir.If):
            st, c = self.expr(s.cond)
            return st + [ir.If(s.loc, c, self.block(s.then),
                               self.block(s.other) if s.other is not None else None)]
        if isinstance(s, ir.Loop):
            return [self._loop(s)]
        if isinstance(s, ir.Return):
            st, v = self.expr(s.value) if s.value is not None else ([], None)
            return st + [ir.Return(s.loc, v)]
        if isinstance(s, ir.Switch):
            st, v = self.expr(s.value)
            body = [self.block(x) for x in s.body]
            return st + [ir.Switch(s.loc, v, s.cases, body)]
        return [s]

    def _loop(self, s: ir.Loop) -> ir.Stmt:
        body = self.block(s.body)
        if self.contains_call(s.step):
            raise CompileError("a function call in a for-loop step is not supported; "
                               "move it into the loop body", s.step.loc)
        if not self.contains_call(s.cond):
            return ir.Loop(s.loc, s.cond, body, s.step, s.do_while)
        # for(;;) { [if (!first)] { cond stmts; if (!c) break; } first = false; body }
        st, c = self.expr(s.cond)
        check = ir.Block(s.loc, st + [ir.If(s.loc, ir.Unary(ir.BOOL, s.loc, "lnot", c),
                                             ir.Break(s.loc), None)])
        pre, stmts = [], []
        if s.do_while:
            first = self._temp(ir.BOOL, s.loc)
            pre.append(ir.Decl(s.loc, first, ir.Const(ir.BOOL, s.loc, True)))
            fv = ir.VarRef(ir.BOOL, s.loc, first)
            stmts.append(ir.If(s.loc, ir.Unary(ir.BOOL, s.loc, "lnot", fv), check, None))
            stmts.append(ir.ExprStmt(s.loc, ir.Assign(ir.BOOL, s.loc, first,
                                                      ir.Const(ir.BOOL, s.loc, False))))
        else:
            stmts.append(check)
        stmts.append(body)
        loop = ir.Loop(s.loc, None, ir.Block(s.loc, stmts), s.step, False)
        return ir.Block(s.loc, pre + [loop]) if pre else loop


def hoist_calls(body: ir.Block) -> ir.Block:
    """The function body with calls and barriers only at statement level."""
    return CallHoister().block(body)
