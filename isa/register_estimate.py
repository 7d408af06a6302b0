"""Per-thread register estimate of a kernel, from the IR alone (no preset needed
for the demand; the caps need the preset's register limits).

Method (a linear-scan register model, as Poletto & Sarkar's allocator sees it):

1. The kernel body, with every device function inlined at its call sites, is
   laid out in evaluation order; each statement (declaration, expression
   statement, condition, loop step, return) gets a position.
2. Every register variable (storage 'reg', and inlined device functions'
   parameters) that is read gets a live interval [first occurrence, last
   occurrence]. A variable declared outside a loop that is read in the loop
   before it is written there, or that is used after the loop, is live around
   the back edge: its interval is widened to the whole loop. A kernel
   parameter that is never assigned takes no register: SASS reads it as a
   constant-bank operand (c[0x0][...]); likewise __constant__ data.
3. Expression temporaries are counted Sethi-Ullman style: evaluating operands
   left to right, each finished operand is held while the next is evaluated.
   Constants are immediates (0 registers); a variable operand is already in its
   own register. In a loop with a constant trip count (`for (int j = C0; j < C1;
   j += C2)`), which ptxas unrolls, the temporaries of min(trip, UNROLL=4)
   copies of the body are in flight together (the unrolled loads are batched).
4. Sizes: a 8/16/32-bit scalar is 1 register, a 64-bit scalar (long long,
   double) or a global/generic pointer 2, a shared/local pointer 1 (32-bit
   addresses in SASS), a vector type count x its element, bool 0 (predicate
   registers P0-P6 are a separate file that ptxas does not count).
5. demand = BASE_REGISTERS + max over positions of (live variables + held
   temporaries). BASE_REGISTERS covers what ptxas always takes on sm_20+ (R1 as
   the stack pointer, the address of the parameter/thread-index reads and the
   scratch of the address arithmetic); it was calibrated against
   `nvcc -arch=sm_90 -Xptxas -v` (CUDA 13) on programs/: mean absolute error
   2.4 registers over 17 kernels, worst 8 (tests/test_register_estimate.py).

The count is NOT rounded: ptxas reports exact counts (e.g. 13); the occupancy
calculator rounds registers per warp to the allocation unit.

Caps (`cap_registers`): the preset's max_registers_per_thread; a
`maxrregcount` compile option; `__launch_bounds__(maxThreads, minBlocks)`: the
largest count with which minBlocks (default 1) blocks of maxThreads threads
fit on one SM by the occupancy calculator's register rule. Demand beyond the
cap is reported as spilled registers (local memory). Bounds that no SM could
hold are ignored as ptxas ignores them (`ptxas_bounds`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from isa import ir

BASE_REGISTERS = 6
UNROLL = 4      # ptxas unrolls constant-trip loops; this many copies' temporaries overlap


def weight(t) -> int:
    """Registers one value of IR type t occupies (see the module docstring)."""
    if isinstance(t, ir.ScalarType):
        if t.kind == "bool":
            return 0
        return 2 if t.bits == 64 else 1
    if isinstance(t, ir.PointerType):
        return 1 if t.space in ("shared", "local") else 2
    if isinstance(t, ir.VectorType):
        return t.count * weight(t.elem)
    return 0


def _constant_operand(e) -> bool:
    """A __constant__ symbol's address or a load from one."""
    if isinstance(e, ir.GlobalRef):
        return e.var.space == "constant"
    if isinstance(e, ir.Load):
        a = e.addr
        while isinstance(a, (ir.PtrAdd, ir.Cast)):
            a = a.ptr if isinstance(a, ir.PtrAdd) else a.a
        return isinstance(a, ir.GlobalRef) and a.var.space == "constant"
    return False


class _Walker:
    def __init__(self):
        self.pos = 0
        self.peak = {}          # position -> held temporaries (max)
        self.events = {}        # key -> list of (pos, kind) in evaluation order
        self.weights = {}       # key -> registers
        self.decl_pos = {}      # key -> position of its declaration
        self.loops = []         # (start, end)
        self.extra = 0          # registers held by an enclosing expression across an inlined call
        self.ctx = 0
        self._nctx = 0
        self.unroll = None

    # -- positions and events
    def new_pos(self) -> int:
        self.pos += 1
        return self.pos

    def note(self, regs: int) -> None:
        regs += self.extra
        if regs > self.peak.get(self.pos, 0):
            self.peak[self.pos] = regs

    def key(self, var):
        return (self.ctx, id(var))

    def event(self, var, kind: str) -> None:
        if var.storage not in ("reg", "param"):
            return
        w = weight(var.type)
        if w == 0:
            return
        k = self.key(var)
        self.weights[k] = w
        self.events.setdefault(k, []).append((self.pos, kind))

    # -- expressions: return the registers the result occupies
    def ev(self, e, held: int) -> int:
        if e is None or isinstance(e, ir.Const):
            return 0
        if isinstance(e, ir.VarRef):
            self.event(e.var, "use")
            return 0
        if isinstance(e, ir.Special):
            self.note(held + 1)
            return 1
        if _constant_operand(e):
            # __constant__ data read at a (after unrolling) constant offset is a
            # c[bank][offset] operand of the instruction using it: no register
            self.uses_only(e)
            return 0
        if isinstance(e, (ir.AddrOf, ir.GlobalRef)):
            w = weight(e.type)
            self.note(held + w)
            return w
        if isinstance(e, ir.Assign):
            self.ev(e.value, held)
            self.event(e.var, "def")
            return 0
        if isinstance(e, ir.Comma):
            w = 0
            for x in e.exprs:
                w = self.ev(x, held)
            return w
        if isinstance(e, ir.Logical):
            wa = self.ev(e.a, held)
            self.ev(e.b, held + wa)
            return weight(e.type)
        if isinstance(e, ir.Cond):
            wc = self.ev(e.c, held)
            wa = self.ev(e.a, held + wc)
            wb = self.ev(e.b, held + wc)
            r = weight(e.type)
            self.note(held + max(r, wc + max(wa, wb)))
            return r
        if isinstance(e, ir.Call):
            return self.call(e, held)
        kids = self.children(e)
        h = held
        for c in kids:
            h += self.ev(c, h)
        r = weight(e.type) if not isinstance(e, ir.Store) else 0
        if isinstance(e, ir.MemCopy):
            h += 1   # the word in flight
        self.note(max(h, held + r))
        return r

    def uses_only(self, e) -> None:
        """Record the variable reads under e without charging temporaries."""
        if isinstance(e, ir.VarRef):
            self.event(e.var, "use")
        for x in self.children(e):
            self.uses_only(x)

    @staticmethod
    def children(e) -> list:
        if isinstance(e, ir.Unary) or isinstance(e, ir.Cast):
            return [e.a]
        if isinstance(e, ir.Binary):
            return [e.a, e.b]
        if isinstance(e, ir.Load):
            return [e.addr]
        if isinstance(e, ir.PtrAdd):
            return [e.ptr, e.offset]
        if isinstance(e, ir.Store):
            return [e.addr, e.value]
        if isinstance(e, ir.MemCopy):
            return [e.dst, e.src]
        if isinstance(e, ir.Extract):
            return [e.vec]
        if isinstance(e, (ir.MakeVector,)):
            return list(e.elems)
        if isinstance(e, ir.Intrinsic):
            return list(e.args)
        return []

    def call(self, e: ir.Call, held: int) -> int:
        h = held
        for a in e.args:
            h += self.ev(a, h)
        f = e.func
        if f.body is None:
            return weight(f.ret)
        outer_ctx, outer_extra = self.ctx, self.extra
        self._nctx += 1
        self.ctx = self._nctx
        self.extra = outer_extra + held        # enclosing temporaries stay live
        for p in f.params:                     # arguments move into the parameters
            self.decl_pos[self.key(p)] = self.pos
            self.event(p, "def")
        self.stmt(f.body)
        self.ctx, self.extra = outer_ctx, outer_extra
        self.new_pos()
        r = weight(f.ret)
        self.note(held + r)
        return r

    # -- statements
    def stmt(self, s) -> None:
        if s is None:
            return
        if isinstance(s, ir.Block):
            prev = None
            for x in s.stmts:
                if isinstance(x, ir.Loop):
                    self.unroll = _trip_count(prev, x)
                self.stmt(x)
                prev = x
        elif isinstance(s, ir.Decl):
            self.new_pos()
            self.decl_pos[self.key(s.var)] = self.pos
            if s.init is not None:
                self.ev(s.init, 0)
                self.event(s.var, "def")
        elif isinstance(s, ir.ExprStmt):
            self.new_pos()
            self.ev(s.expr, 0)
        elif isinstance(s, ir.If):
            self.new_pos()
            self.ev(s.cond, 0)
            self.stmt(s.then)
            self.stmt(s.other)
        elif isinstance(s, ir.Loop):
            trip, self.unroll = self.unroll, None
            start = self.pos + 1
            if not s.do_while:
                self.new_pos()
                self.ev(s.cond, 0)
            self.stmt(s.body)
            self.new_pos()
            self.ev(s.step, 0)
            if s.do_while:
                self.new_pos()
                self.ev(s.cond, 0)
            self.loops.append((start, self.pos))
            if trip:   # unrolled: the copies' loads are in flight together
                u = min(trip, UNROLL)
                for p in range(start, self.pos + 1):
                    if p in self.peak:
                        self.peak[p] *= u
        elif isinstance(s, ir.Return):
            self.new_pos()
            self.ev(s.value, 0)
        elif isinstance(s, ir.Switch):
            self.new_pos()
            self.ev(s.value, 0)
            for x in s.body:
                self.stmt(x)
        # Break / Continue: no registers


def _trip_count(decl, loop) -> Optional[int]:
    """Iterations of `for (int i = C0; i < C1; i += C2)` (also <=, >, >=, !=; -=),
    None when not a constant."""
    if not (isinstance(decl, ir.Decl) and isinstance(decl.init, (ir.Const, ir.Cast))
            and not loop.do_while and isinstance(loop.cond, ir.Binary)):
        return None
    init = decl.init
    while isinstance(init, ir.Cast):
        init = init.a
    c, step = loop.cond, loop.step
    if not (isinstance(init, ir.Const) and isinstance(c.a, ir.VarRef) and c.a.var is decl.var):
        return None
    bound = c.b
    while isinstance(bound, ir.Cast):
        bound = bound.a
    if not isinstance(bound, ir.Const):
        return None
    while isinstance(step, ir.Comma) and step.exprs:
        step = step.exprs[0]
    if not (isinstance(step, ir.Assign) and step.var is decl.var and isinstance(step.value, ir.Binary)
            and step.value.op in ("add", "sub")):
        return None
    inc = step.value.b
    while isinstance(inc, ir.Cast):
        inc = inc.a
    if not isinstance(inc, ir.Const) or not inc.value:
        return None
    d = int(inc.value) if step.value.op == "add" else -int(inc.value)
    lo, hi = int(init.value), int(bound.value)
    span = {"lt": hi - lo, "le": hi - lo + 1, "gt": lo - hi, "ge": lo - hi + 1,
            "ne": hi - lo}.get(c.op)
    if span is None or span <= 0 or (d > 0) != (c.op in ("lt", "le", "ne")) and c.op != "ne":
        return None
    n = -(-span // abs(d))
    return n if 0 < n <= 1 << 20 else None


def _intervals(w: _Walker) -> dict:
    out = {}
    loops = sorted(w.loops, key=lambda l: l[1] - l[0])     # innermost first
    for k, evs in w.events.items():
        if not any(kind == "use" for _, kind in evs):
            continue                                       # never read: no register
        if k[0] == 0 and w.decl_pos.get(k) == 0 and not any(kind == "def" for _, kind in evs):
            continue      # a kernel parameter never written: a constant-bank operand (c[0x0][..])
        lo = min(p for p, _ in evs)
        hi = max(p for p, _ in evs)
        dpos = w.decl_pos.get(k, 0)
        for ls, le in loops:
            if ls <= dpos <= le:
                continue                                   # declared inside the loop
            inside = [(p, kind) for p, kind in evs if ls <= p <= le]
            if not inside:
                continue
            if inside[0][1] == "use" or hi > le:
                lo, hi = min(lo, ls), max(hi, le)
        out[k] = (lo, hi, evs)
    return out


def walk(fn: ir.Function, w: Optional[_Walker] = None) -> _Walker:
    """Walk the kernel's body with `w` (a fresh _Walker by default): the
    events and positions the live intervals are made of."""
    w = w if w is not None else _Walker()
    for p in fn.params:
        w.decl_pos[w.key(p)] = 0
    w.stmt(fn.body)
    return w


def counted_span(lo: int, hi: int, evs: list) -> tuple:
    """(first, last): the positions at which a variable with live interval
    [lo, hi] and events `evs` is counted. A variable first written at lo is
    that statement's result, already counted among its temporaries there."""
    return (lo + 1 if evs[0] == (lo, "def") else lo), hi


def register_pressure(w: _Walker, ivs: dict, dropped: frozenset = frozenset()) -> dict:
    """Registers wanted at each position of the walk {position: registers},
    leaving out the `dropped` variables (spilled: isa/register_spill.py).
    One sweep over the intervals' ends (a difference array), not positions x
    intervals: kernels with thousands of live values stay fast."""
    diff = [0] * (w.pos + 2)
    for k, (lo, hi, evs) in ivs.items():
        if k in dropped:
            continue
        a, b = counted_span(lo, hi, evs)
        a, b = max(a, 1), min(b, w.pos)
        if a <= b:
            diff[a] += w.weights[k]
            diff[b + 1] -= w.weights[k]
    out = {}
    live = 0
    for p in range(1, w.pos + 1):
        live += diff[p]
        out[p] = BASE_REGISTERS + live + w.peak.get(p, 0)
    return out


def register_demand(fn: ir.Function) -> int:
    """Registers per thread the kernel's code wants (before any cap)."""
    w = walk(fn)
    return max(register_pressure(w, _intervals(w)).values(), default=BASE_REGISTERS)


def parse_maxrregcount(options) -> Optional[int]:
    """The value of nvcc's -maxrregcount=N / --maxrregcount N / -Xptxas
    --maxrregcount=N among compile options (None if absent)."""
    flat = []
    for o in options or ():
        flat += str(o).split()
    val = None
    for i, o in enumerate(flat):
        s = o.lstrip("-")
        if s.startswith("maxrregcount"):
            rest = s[len("maxrregcount"):].lstrip("=")
            if not rest and i + 1 < len(flat):
                rest = flat[i + 1]
            try:
                val = int(rest)
            except ValueError:
                raise ValueError(f"maxrregcount needs an integer, got {rest!r}") from None
    return val


@dataclass(frozen=True)
class RegisterEstimate:
    demand: int          # registers the code wants
    count: int           # registers allocated per thread (demand capped)
    cap: int             # the effective cap
    cap_reason: str      # 'arch' | 'maxrregcount' | '__launch_bounds__'
    spilled: int         # registers' worth of values spilled to local memory

    @property
    def spill_bytes(self) -> int:
        return 4 * self.spilled


def ptxas_bounds(preset, launch_bounds=None) -> tuple:
    """(maxThreads, minBlocks) that ptxas honours: (0, 1) for no bound.

    ptxas (CUDA 13.0, -arch=sm_90) ignores a bound past what one SM holds, with a
    warning: maxThreads rounded up to whole warps above max_threads_per_sm ("Value of
    threads per SM for entry k is out of range. .minnctapersm and .maxntid will be
    ignored"); minBlocks above max_blocks_per_sm ("Value of minnctapersm for entry k is
    out of range. minnctapersm will be ignored") or times the rounded maxThreads above
    max_threads_per_sm ("... .minnctapersm will be ignored"); minBlocks without
    maxThreads (".minnctapersm is ignored when neither .maxntid nor .reqntid is
    specified"). sm_80, sm_86 and sm_75 follow the same rule with their own limits."""
    threads = int(launch_bounds[0] or 0) if launch_bounds else 0
    min_blocks = int(launch_bounds[1] or 1) if launch_bounds else 1
    warps_threads = -(-threads // preset.warp_size) * preset.warp_size
    if threads <= 0 or warps_threads > preset.max_threads_per_sm:
        return 0, 1
    if min_blocks > preset.max_blocks_per_sm or warps_threads * min_blocks > preset.max_threads_per_sm:
        min_blocks = 1
    return threads, min_blocks


def cap_registers(preset, launch_bounds=None, maxrregcount: Optional[int] = None) -> tuple:
    """(cap, reason): the most registers per thread allowed."""
    cap, reason = int(preset.max_registers_per_thread), "arch"
    if maxrregcount is not None and 0 < maxrregcount < cap:
        cap, reason = int(maxrregcount), "maxrregcount"
    threads, min_blocks = ptxas_bounds(preset, launch_bounds)
    if threads:
        from gpuemu.machine.occupancy import blocks_limited_by_registers
        r = cap
        while r > 1 and blocks_limited_by_registers(preset, threads, r) < min_blocks:
            r -= 1
        if r < cap:
            cap, reason = r, "__launch_bounds__"
    return cap, reason


def estimate_registers(fn: ir.Function, preset, options=(), maxrregcount: Optional[int] = None
                       ) -> RegisterEstimate:
    """The kernel's per-thread register count on `preset`, capped as ptxas caps it."""
    if maxrregcount is None:
        maxrregcount = parse_maxrregcount(options)
    demand = register_demand(fn)
    cap, reason = cap_registers(preset, fn.launch_bounds, maxrregcount)
    count = min(demand, cap)
    return RegisterEstimate(demand, count, cap, reason, demand - count)
