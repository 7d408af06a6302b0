"""Register spilling: values beyond the register cap live in local memory.

When a kernel's register demand (isa/register_estimate.py) exceeds its cap
(the preset's limit, -maxrregcount, __launch_bounds__), ptxas keeps some
values in the thread's local memory and reloads them where they are used
(STL after each definition, LDL before each use: the "spill stores" and
"spill loads" of `ptxas -v`). We do the same on the IR, so the emulator
executes real local-memory requests that the memory system charges through
L1 and L2 like any local access, per source line.

Choice of the values to spill (the linear-scan rule of Poletto & Sarkar,
"Linear Scan Register Allocation", TOPLAS 1999): while the register
pressure at some position exceeds the cap, spill, among the kernel's own
register variables live there, the one whose live interval is longest per
use (it frees the most pressure for the fewest reloads). Temporaries,
kernel parameters and variables of inlined device functions are not
spilled; if they alone exceed the cap, the count stays above it.

The spilled variable becomes a 4-byte-aligned local object; every read is
a Load and every write a Store marked `spill=True`, which the memory system
counts as spill_load_requests / spill_store_requests / spill_bytes besides
the local_* counters.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace

from . import ir
from .register_estimate import _intervals, _Walker, estimate_registers, register_pressure, walk, weight


class _VarWalker(_Walker):
    """The estimate's walker, remembering the Var behind each key."""

    def __init__(self):
        super().__init__()
        self.vars: dict = {}

    def event(self, var, kind: str) -> None:
        self.vars[self.key(var)] = var
        super().event(var, kind)


@dataclass(frozen=True)
class SpillPlan:
    """What spilling does to one kernel."""
    spilled: tuple           # the Vars moved to local memory
    store_bytes: int         # static bytes of spill stores (ptxas -v "bytes spill stores")
    load_bytes: int          # static bytes of spill loads
    frame_bytes: int         # local bytes the spill slots take (part of the stack frame)


def choose_spills(fn: ir.Function, cap: int) -> list:
    """The kernel's register variables to keep in local memory so that the
    pressure stays within `cap` registers (see the module docstring)."""
    w = walk(fn, _VarWalker())
    ivs = _intervals(w)
    dropped: set = set()
    chosen = []
    while True:
        pr = register_pressure(w, ivs, frozenset(dropped))
        if not pr:
            break
        p_max = max(pr, key=lambda p: pr[p])
        if pr[p_max] <= cap:
            break
        cands = [k for k, (lo, hi, evs) in ivs.items()
                 if k not in dropped and k[0] == 0 and lo <= p_max <= hi
                 and w.vars[k].storage == "reg"
                 and isinstance(w.vars[k].type, (ir.ScalarType, ir.PointerType))]
        if not cands:
            break
        best = max(cands, key=lambda k: ((ivs[k][1] - ivs[k][0]) / len(ivs[k][2]), -ivs[k][0]))
        dropped.add(best)
        chosen.append(w.vars[best])
    return chosen


class _Rewriter:
    def __init__(self, spilled: list):
        self.slot = {id(v): ir.Var(v.name, v.type, "local", v.loc, v.volatile) for v in spilled}
        self.store_bytes = 0
        self.load_bytes = 0

    def addr(self, v: ir.Var, loc):
        slot = self.slot[id(v)]
        return ir.AddrOf(ir.PointerType(v.type, "local"), loc, slot)

    def node(self, n):
        if isinstance(n, list):
            out = []
            for x in n:
                r = self.node(x)
                out.extend(r if isinstance(r, _Seq) else [r])
            return out
        if isinstance(n, tuple):
            return tuple(self.node(x) for x in n)
        if isinstance(n, ir.VarRef) and id(n.var) in self.slot:
            self.load_bytes += n.var.type.size
            return ir.Load(n.var.type, n.loc, self.addr(n.var, n.loc), spill=True)
        if isinstance(n, ir.Assign) and id(n.var) in self.slot:
            self.store_bytes += n.var.type.size
            return ir.Store(n.var.type, n.loc, self.addr(n.var, n.loc), self.node(n.value), spill=True)
        if isinstance(n, ir.Decl) and id(n.var) in self.slot:
            slot = self.slot[id(n.var)]
            if n.init is None:
                return _Seq([ir.Decl(n.loc, slot, None)])
            self.store_bytes += n.var.type.size
            st = ir.Store(n.var.type, n.loc, self.addr(n.var, n.loc), self.node(n.init), spill=True)
            return _Seq([ir.Decl(n.loc, slot, None), ir.ExprStmt(n.loc, st)])
        if isinstance(n, (ir.Expr, ir.Stmt)) and is_dataclass(n):
            changes = {}
            for f in fields(n):
                v = getattr(n, f.name)
                if isinstance(v, (ir.Expr, ir.Stmt, list, tuple)):
                    nv = self.node(v)
                    if isinstance(nv, _Seq):
                        nv = ir.Block(n.loc, list(nv))
                    changes[f.name] = nv
            return replace(n, **changes) if changes else n
        return n


class _Seq(list):
    """Statements that replace one statement in its block."""


def spill_kernel(fn: ir.Function, cap: int) -> tuple:
    """(kernel, SpillPlan): a copy of the kernel with the chosen variables in
    local memory, or the kernel itself (and an empty plan) when it fits."""
    chosen = choose_spills(fn, cap)
    if not chosen:
        return fn, SpillPlan((), 0, 0, 0)
    rw = _Rewriter(chosen)
    body = rw.node(fn.body)
    if isinstance(body, _Seq):
        body = ir.Block(fn.body.loc, list(body))
    new = replace(fn, body=body)
    frame = 0
    for v in chosen:
        a = max(v.type.align, 1)
        frame = (frame + a - 1) // a * a + v.type.size
    return new, SpillPlan(tuple(chosen), rw.store_bytes, rw.load_bytes, frame)


def apply_register_cap(fn: ir.Function, preset, options=()) -> tuple:
    """The kernel as ptxas would allocate it on `preset` with these compile
    options: (kernel, RegisterEstimate, SpillPlan)."""
    est = estimate_registers(fn, preset, options)
    if est.spilled <= 0:
        return fn, est, SpillPlan((), 0, 0, 0)
    new, plan = spill_kernel(fn, est.cap)
    return new, est, plan


__all__ = ["SpillPlan", "choose_spills", "spill_kernel", "apply_register_cap", "weight"]
