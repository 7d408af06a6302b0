"""How many warp instructions a load's value is not needed for (timing mode).

A GPU does not wait for a load at issue: the scoreboard stalls the warp at the
first instruction that reads the loaded register, so the instructions in
between hide part of the latency. We measure that distance statically on the
structured IR, in the order the JIT executes it (gpuemu/jit/warp_codegen.py:
operands left to right, then the operation itself):

- a load consumed inside an expression (`a[i] * b[j]`, `tile[t] = in[i]`) is
  needed by its parent operation: the distance is the operations executed
  between them (for `a[i] * b[j]`, `b[j]`'s address arithmetic and load; for
  `in[i] * 2.0f`, none);
- a load assigned to a variable (`float v = in[i];`) is needed at the first
  later read of that variable, walking the following statements in source
  order (if/loop bodies once, as written);
- a value never read again is waited for at the end of the function.

Control flow is flattened as written, so a distance is an estimate (the
compiler's scheduling is not modelled). Result: {id(node): distance}.
"""
from __future__ import annotations

import dataclasses

from isa import ir

COUNTED = (ir.Binary, ir.Unary, ir.Cast, ir.PtrAdd, ir.Load, ir.Store, ir.Intrinsic,
           ir.Cond, ir.Logical, ir.MemCopy, ir.Extract, ir.MakeVector)
_SKIP = {"type", "loc", "var", "func"}
# statements the JIT counts as one instruction each (branch tests, jumps)
_STMT_TICKS = (ir.If, ir.Loop, ir.Break, ir.Continue, ir.Return, ir.Switch)


def _produces_value(e) -> bool:
    """A memory read whose result a later instruction waits for."""
    return isinstance(e, ir.Load) or (isinstance(e, ir.Intrinsic) and e.name.startswith("atomic")
                                      and e.result_used)


def _children(node):
    for f in dataclasses.fields(node):
        if f.name in _SKIP:
            continue
        v = getattr(node, f.name)
        if isinstance(v, (ir.Expr, ir.Stmt)):
            yield v
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, (ir.Expr, ir.Stmt)):
                    yield x


class _Walk:
    def __init__(self) -> None:
        self.t = 0                 # number of the next counted operation
        self.done: dict = {}       # id(load) -> the load's own operation number
        self.dist: dict = {}       # id(load) -> distance
        self.pending_var: dict = {}  # id(var) -> [id(load), ...] waiting for a read

    def resolve(self, key: int, at: int) -> None:
        """The value of load `key` is first read by the operation numbered `at`."""
        if key in self.done and key not in self.dist:
            self.dist[key] = max(at - self.done[key] - 1, 0)

    def expr(self, e) -> None:
        kids = list(_children(e))
        for c in kids:
            self.expr(c)
        if isinstance(e, ir.VarRef):
            # read by the next counted operation (this one's parent or later)
            for key in self.pending_var.pop(id(e.var), ()):
                self.resolve(key, self.t)
        if isinstance(e, COUNTED):
            for c in kids:       # this operation consumes its operands' values
                if _produces_value(c):
                    self.resolve(id(c), self.t)
            if _produces_value(e):
                self.done[id(e)] = self.t
            self.t += 1
        elif not isinstance(e, (ir.Assign, ir.Comma)):
            for c in kids:       # passed through (a VarRef, ...): read by what comes next
                if _produces_value(c):
                    self.resolve(id(c), self.t)
        if isinstance(e, ir.Assign):
            self._assigned(e.var, e.value)

    def _assigned(self, var, value) -> None:
        while isinstance(value, ir.Comma) and value.exprs:
            value = value.exprs[-1]
        if _produces_value(value):
            self.pending_var.setdefault(id(var), []).append(id(value))

    def stmt(self, s) -> None:
        if isinstance(s, _STMT_TICKS):
            self.t += 1
        for c in _children(s):
            if isinstance(c, ir.Stmt):
                self.stmt(c)
            else:
                self.expr(c)
        if isinstance(s, ir.Decl) and s.init is not None:
            self._assigned(s.var, s.init)


def use_distances(body: ir.Stmt) -> dict:
    """{id(load or value-returning atomic node): warp instructions from the
    load to the first instruction that reads its value} for one function body."""
    w = _Walk()
    w.stmt(body)
    for key in list(w.done):
        w.resolve(key, w.t)    # never read: waited for at the end
    return w.dist
