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
choose_spills makes these choices from one pressure analysis (a segment
tree of the pressure, updated per spill), so thousands of live values cost
O(n log^2 n), not spills x program size; choose_spills_reference is the
rule as written above, and the tests hold the two to the same choices.

The spilled variable becomes a 4-byte-aligned local object; every read is
a Load and every write a Store marked `spill=True`, which the memory system
counts as spill_load_requests / spill_store_requests / spill_bytes besides
the local_* counters.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, fields, is_dataclass, replace

from . import ir
from .register_estimate import (_intervals, _Walker, counted_span, estimate_registers, register_pressure, walk,
                                weight)


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


def _spillable(w: _VarWalker, k) -> bool:
    """The kernel's own register variables (not temporaries, kernel
    parameters or inlined device functions' variables)."""
    v = w.vars[k]
    return k[0] == 0 and v.storage == "reg" and isinstance(v.type, (ir.ScalarType, ir.PointerType))


def _priority(lo: int, hi: int, evs: list) -> tuple:
    """Larger spills first: the longest live interval per use, then the earliest."""
    return ((hi - lo) / len(evs), -lo)


def choose_spills_reference(fn: ir.Function, cap: int) -> list:
    """The rule of choose_spills, plainly: one spill per round, the pressure
    recomputed each round (rounds x program size: slow for thousands of
    live values; choose_spills is tested against it)."""
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
                 if k not in dropped and lo <= p_max <= hi and _spillable(w, k)]
        if not cands:
            break
        best = max(cands, key=lambda k: _priority(*ivs[k]))
        dropped.add(best)
        chosen.append(w.vars[best])
    return chosen


class _MaxTree:
    """Pressure per position under range additions, with its leftmost
    maximum: a segment tree whose node holds its subtree's maximum plus the
    additions made to the whole subtree (no push-down needed)."""

    def __init__(self, values: list):
        n = 1
        while n < len(values):
            n *= 2
        self.n = n
        self.top = [float("-inf")] * (2 * n)
        self.added = [0] * n
        self.top[n:n + len(values)] = values
        for i in range(n - 1, 0, -1):
            self.top[i] = max(self.top[2 * i], self.top[2 * i + 1])

    def add(self, first: int, last: int, v: int) -> None:
        """Add v at indices first..last."""
        top, added, n = self.top, self.added, self.n
        lo, hi = first + n, last + n + 1
        while lo < hi:          # the nodes covering first..last, bottom up
            if lo & 1:
                self._bump(lo, v)
                lo += 1
            if hi & 1:
                hi -= 1
                self._bump(hi, v)
            lo, hi = lo >> 1, hi >> 1
        for i in (first + n, last + n):
            i >>= 1
            while i:
                top[i] = max(top[2 * i], top[2 * i + 1]) + added[i]
                i >>= 1

    def _bump(self, i: int, v: int) -> None:
        self.top[i] += v
        if i < self.n:
            self.added[i] += v

    def leftmost_max(self) -> tuple:
        """(index, value) of the first maximum."""
        top, i = self.top, 1
        while i < self.n:
            i = 2 * i if top[2 * i] >= top[2 * i + 1] else 2 * i + 1
        return i - self.n, top[1]


class _Stabbing:
    """Intervals by priority, asked for the best one containing a position:
    each interval sits in the O(log n) nodes of a segment tree that cover it,
    each node a heap; removed intervals leave the heaps when they reach a top."""

    def __init__(self, n: int):
        size = 1
        while size < n:
            size *= 2
        self.size = size
        self.heaps: dict = {}
        self.removed: set = set()

    def add(self, first: int, last: int, rank: tuple, item) -> None:
        lo, hi = first + self.size, last + self.size + 1
        while lo < hi:
            if lo & 1:
                self.heaps.setdefault(lo, []).append((rank, item))
                lo += 1
            if hi & 1:
                hi -= 1
                self.heaps.setdefault(hi, []).append((rank, item))
            lo, hi = lo >> 1, hi >> 1

    def freeze(self) -> None:
        for h in self.heaps.values():
            heapq.heapify(h)

    def best_at(self, i: int):
        """The smallest-ranked interval containing index i (None if none)."""
        best = None
        node = i + self.size
        while node:
            h = self.heaps.get(node)
            while h and h[0][1] in self.removed:
                heapq.heappop(h)
            if h and (best is None or h[0][0] < best[0]):
                best = h[0]
            node >>= 1
        return None if best is None else best[1]


def choose_spills(fn: ir.Function, cap: int) -> list:
    """The kernel's register variables to keep in local memory so that the
    pressure stays within `cap` registers (see the module docstring).

    The rule of choose_spills_reference from one pressure analysis: the
    pressure per position in a max segment tree (a spill subtracts its
    weight over its counted span), the spillable intervals in a stabbing
    structure ranked by the reference's order (its max() keeps the first of
    equals, hence the walk order last), so each spill costs O(log^2 n)."""
    w = walk(fn, _VarWalker())
    ivs = _intervals(w)
    if w.pos == 0:
        return []
    pressure = _MaxTree(list(register_pressure(w, ivs).values()))   # index p - 1
    live = _Stabbing(w.pos)
    for order, (k, (lo, hi, evs)) in enumerate(ivs.items()):
        first, last = max(lo, 1), min(hi, w.pos)
        if first <= last and _spillable(w, k):
            ratio, neg_lo = _priority(lo, hi, evs)
            live.add(first - 1, last - 1, (-ratio, -neg_lo, order), k)
    live.freeze()
    chosen = []
    while True:
        i, top = pressure.leftmost_max()
        if top <= cap:
            break
        k = live.best_at(i)
        if k is None:
            break
        live.removed.add(k)
        chosen.append(w.vars[k])
        lo, hi, evs = ivs[k]
        first, last = counted_span(lo, hi, evs)
        first, last = max(first, 1), min(last, w.pos)
        if first <= last:
            pressure.add(first - 1, last - 1, -w.weights[k])
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
        a = max(v.type.align, v.align, 1)
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


__all__ = ["SpillPlan", "choose_spills", "choose_spills_reference", "spill_kernel", "apply_register_cap", "weight"]
