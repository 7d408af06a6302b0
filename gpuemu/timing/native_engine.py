"""The cycle engine of timing mode as native code: the rules of sm_engine.py
(reference_engine.py states them one warp at a time) in one call per launch.

The whole cycle loop runs natively: per SM, per scheduler, a scan of its
resident warps in dispatch order classifies each (barrier, memory, pipe,
dependency, ready) and picks the warp to issue by the policy; issues occupy
the memory pipes in scheduler order; then barrier arrivals and releases,
warp exits and block dispatch, in that order, as the numpy engine does them.
Once every block is dispatched the SMs share nothing more, so each SM then
runs to its end alone, one after the other (its records stay in the cache);
the timeline rows are put back in the order of the cycle loop.

What makes it cheap (tens of ns per issued warp instruction):
- A scheduler is looked at again only when something of its warps can have
  changed: the cycle after it issued, after its SM's pipe was taken beyond
  the next cycle (a conflict-free shared request alone in its cycle leaves
  the pipe free again at t + 1: no warp stalls for it), after a warp of it
  arrived, was released or dispatched, or at the first cycle
  at which one of its stalls ends (the earliest of the loads' values, pipe
  free times and issue intervals it waits for). In between, each warp's
  reason stays what it was; cycles in which no scheduler anywhere is due
  are skipped. With gto, while its other warps' stalls last and nothing
  touches them, only the warp it issued last is looked at, and its plain
  instructions (up to its next memory request, barrier or exit, or the use
  of a load not yet there) issue as one run of cycles in one step; an event
  or a pipe change that touches the scheduler mid-run cuts the run back to
  what had issued by then (`cut`), so every count stays as cycle by cycle.
- A warp found ready but not selected, whose next instruction is no memory
  request, stays so until it issues: the scan takes it as such (`lz`)
  without reading its records. Each scheduler keeps two bit marks over the
  places of its list (`barm`: at a barrier, `rnsm`: ready and not selected;
  `pos`: a slot's place), and its scan visits only the other places
  (count-trailing-zeros over the rest): the ready ones only count by their
  keys, and for gto the pick among them is the last-issued one or the first
  marked (a bit scan), not a visit each (178 M -> 71 M visits in matmul
  512x512).
- Stall cycles are counted per span, not per cycle: each warp keeps its
  current reason and source row and since when; a change (or its exit)
  adds the span to its counts and to the row's. Active warp-cycles are the
  warps' resident spans; idle scheduler-cycles are schedulers x the SM's
  busy cycles less its issues.
- Memory traffic: a warp's state is split by use into cache-line records
  (what the scan reads, what an issue reads, the rest), warps at a barrier
  are passed by on their marks (and their entries negative), and the stop points
  are 32-byte records; the timeline comes back as arrays.

Built-in warp policies (gto, lrr, two_level with any `active`, random with
its seeded keys) and block policies (round_robin, least_loaded) are rules in
this code; a user-written policy class (or a subclass of a built-in one,
which may change `pick`) runs in the numpy engine instead (`supports`), which
calls its Python methods. tests/test_native_engine.py checks this engine
against the reference and the numpy engine on random and real traces.

Built with llvmlite once per process (engine.native_function); the state
lives in int64 numpy arrays owned by the caller; ctypes releases the GIL.
"""
from __future__ import annotations

import ctypes
import time
from contextlib import contextmanager
from functools import partialmethod

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import engine
from gpuemu.jit.ir_writer import IRWriter, c, signed64

from .block_policy import LeastLoaded, RoundRobinBlocks
from .sm_engine import SMEngine, TimingResult
from .warp_policies import GreedyThenOldest, LooseRoundRobin, SeededRandom, TwoLevel
from .warp_trace import ITEM_COLUMNS, N_PIPES, WarpPrograms, aligned_zeros

I1, I32, I64 = ll.IntType(1), ll.IntType(32), ll.IntType(64)
P64 = I64.as_pointer()
SYMBOL = "gpuemu_sm_engine_run"
NR = 5                                  # stall reasons (sm_engine.REASONS)
R_MEMORY, R_PIPE, R_BARRIER, R_DEPENDENCY, R_NOT_SELECTED = range(NR)
MEM, BARRIER, EXIT = 0, 1, 2            # warp_trace item kinds
FAR = 1 << 62
MAX_LIST = 64                           # warp slots per scheduler the list marks hold

WARP_POLICY_CODES = {GreedyThenOldest: 0, LooseRoundRobin: 1, TwoLevel: 2, SeededRandom: 3}
BLOCK_POLICY_CODES = {RoundRobinBlocks: 0, LeastLoaded: 1}

# Three records per warp slot (one, one and two cache lines): what the scan reads, what an
# issue reads, the rest. A warp waiting at a barrier is marked in its scheduler's list
# (-1 - slot), so the scan passes it by without reading its records. memat: 2 x the instruction number of the next item + its pipe when it is a
# memory request, else -1; stop: the instruction number of the next item when it is a
# barrier or the exit, else -1; nline5 / depl5: 5 x the counter row of the next item / of
# the awaited load; cur, curr, since: the current stall span (by_row index, reason, start);
# ncostlat, nuse: the next item's cost << 32 | latency (int32 both) and use (kept when the
# warp moves on to it, so that its issue, often much later, need not read it again).
HOT_FIELDS = ("cur", "nline5", "ic", "dep_pos", "dep_ready", "memat", "ready", "depl5")
WARM_FIELDS = ("stop", "curr", "since", "ptr", "end", "atbar", "ncostlat", "nuse")
COLD_FIELDS = ("occ", "nat", "nkind", "gw", "blk", "age",
               "bar_since", "born", "sm", "acc0", "acc1", "acc2", "acc3", "acc4")
F_ = {**{n: ("hot", i) for i, n in enumerate(HOT_FIELDS)},
      **{n: ("warm", i) for i, n in enumerate(WARM_FIELDS)},
      **{n: ("cold", i) for i, n in enumerate(COLD_FIELDS)}}
RECORD_W = {"hot": 8, "warm": 8, "cold": 16}
# One record of ITEM_W int32 per stop point (warp_trace.WarpPrograms.items, ITEM_COLUMNS): 32 bytes, as
# the engine walks every warp's stream at once (a launch whose numbers do not fit in int32
# runs in the numpy engine).
ITEM_FIELDS = ITEM_COLUMNS[:7]
ITEM_W = len(ITEM_COLUMNS)
# lz[slot]: 2 x the cycle until which the reason the scan last gave the warp holds, + 1
# when it is a candidate of two_level's active set; 0: look again; -1: ready, not selected,
# its next instruction no memory request (until it issues; its bit in `rnsm`). Kept for a memory stall
# (until its value comes) and a dependency stall whose next instruction is no memory
# request (until its issue interval ends): nothing but the warp's own issue, release or
# dispatch changes those (each sets 0), so the scan takes them as they were, not
# reading the warp's records (most of a scheduler's warps, most of the time).
# The arrays the native code reads and writes, in the order of the pointer table.
ARRAYS = (
    "item", "wbeg", "wend",                                                  # items (read only)
    "hot", "warm", "cold", "lz",                                             # slot records
    "last", "cnt", "order", "chosen", "wake", "elig", "fast", "owake", "psens", "rend",  # per scheduler
    "barm", "rnsm", "pos",                                                   # list marks, places
    "bsm", "br", "blive", "bbar",                                            # per block
    "resident", "nfree", "freer", "pf", "issued", "busy", "busy_since", "active", "sm_end",
    "stalls", "wstart", "by_row", "tl_warps", "tl_bars", "tl_wnow", "tl_bnow", "arr",
)
A = {name: i for i, name in enumerate(ARRAYS)}
# scalar parameters and state (one int64 array)
SCALARS = ("M", "S", "K", "B", "nw", "nb", "alu", "policy", "active_n", "seed", "bpolicy",
           "timeline", "seq", "next_block", "done", "cursor", "n_tl_warps", "n_tl_bars", "err",
           "iterations", "now", "scans", "tl_w0", "tl_b0")
S_ = {name: i for i, name in enumerate(SCALARS)}
C1, C2, C3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB   # warp_policies.random_key


class _Fn(IRWriter):
    """An LLVM function of (array table, scalars, int64 args): the engine's
    arrays and scalars by name, loops with break and continue."""

    def __init__(self, module: ll.Module, name: str, nargs: int) -> None:
        fn = ll.Function(module, ll.FunctionType(I64, [P64, P64] + [I64] * nargs), name)
        fn.linkage = "internal" if name != SYMBOL else "external"
        super().__init__(fn)
        self.tab, self.sc = self.fn.args[0], self.fn.args[1]
        self.args = self.fn.args[2:]
        self._arr: dict = {}

    def arr(self, name: str):
        """The pointer to array `name` (loaded from the table once per function)."""
        if name not in self._arr:
            eb = ll.IRBuilder(self.entry)
            addr = eb.load(eb.gep(self.tab, [c(A[name])]))
            self._arr[name] = eb.inttoptr(addr, P64)
        return self._arr[name]

    def finish(self) -> None:
        if not self.b.block.is_terminated:
            self.b.unreachable()
        self.close_entry()

    # memory
    def ld(self, name: str, i):
        return self.b.load(self.b.gep(self.arr(name), [i]))

    def st(self, name: str, i, v) -> None:
        self.b.store(v if isinstance(v, ll.Value) else c(v), self.b.gep(self.arr(name), [i]))

    def add_to(self, name: str, i, v) -> None:
        p = self.b.gep(self.arr(name), [i])
        self.b.store(self.b.add(self.b.load(p), v if isinstance(v, ll.Value) else c(v)), p)

    def sp(self, s):
        """The addresses of slot s's records: {'hot': ..., 'cold': ...}."""
        return {rec: self.b.gep(self.arr(rec), [self.b.mul(s, c(w))]) for rec, w in RECORD_W.items()}

    def fp(self, sp, field: str):
        rec, i = F_[field]
        return self.b.gep(sp[rec], [c(i)])

    def fl(self, sp, field: str):
        return self.b.load(self.fp(sp, field))

    def fs(self, sp, field: str, v) -> None:
        self.b.store(v if isinstance(v, ll.Value) else c(v), self.fp(sp, field))

    def it(self, p, field: str):
        """Field `field` of stop point p (int32, widened)."""
        if "item32" not in self._arr:
            eb = ll.IRBuilder(self.entry)
            addr = eb.load(eb.gep(self.tab, [c(A["item"])]))
            self._arr["item32"] = eb.inttoptr(addr, I32.as_pointer())
        i = self.b.add(self.b.mul(p, c(ITEM_W)), c(ITEM_FIELDS.index(field)))
        return self.b.sext(self.b.load(self.b.gep(self._arr["item32"], [i])), I64)

    def prefetch(self, p) -> None:
        """Ask the cache for stop point p's record (a hint: no fault if past the end)."""
        self.it(p, "at")                    # makes sure item32 is loaded in the entry block
        i8p = ll.IntType(8).as_pointer()
        fn = self.fn.module.declare_intrinsic("llvm.prefetch", fnty=ll.FunctionType(
            ll.VoidType(), [i8p, I32, I32, I32]))
        addr = self.b.gep(self._arr["item32"], [self.b.mul(p, c(ITEM_W))])
        self.b.call(fn, [self.b.bitcast(addr, i8p), ll.Constant(I32, 0), ll.Constant(I32, 3),
                         ll.Constant(I32, 1)])

    def get(self, scalar: str):
        return self.b.load(self.b.gep(self.sc, [c(S_[scalar])]))

    def put(self, scalar: str, v) -> None:
        self.b.store(v if isinstance(v, ll.Value) else c(v), self.b.gep(self.sc, [c(S_[scalar])]))

    # control flow
    @contextmanager
    def loop(self, lo, hi):
        """for i in range(lo, hi) (hi evaluated once); yields (i, loop) with .brk()/.cont()."""
        with self.loop_blocks(lo, hi) as (i, step, end):
            yield i, _Loop(self, step, end)

    @contextmanager
    def while_(self, cond_fn):
        with self.while_blocks(cond_fn) as (head, end):
            yield _Loop(self, head, end)

    def jump(self, target) -> None:
        """Branch to `target` and go on writing in a fresh (unreachable) block."""
        self.b.branch(target)
        self.b.position_at_end(self.fn.append_basic_block("dead"))

    def ret(self, v=0) -> None:
        self.b.ret(v if isinstance(v, ll.Value) else c(v))
        self.b.position_at_end(self.fn.append_basic_block("dead"))

    # compare shorthands (cmp, min, max: IRWriter)
    lt, le = partialmethod(IRWriter.cmp, "<"), partialmethod(IRWriter.cmp, "<=")
    gt, ge = partialmethod(IRWriter.cmp, ">"), partialmethod(IRWriter.cmp, ">=")
    eq, ne = partialmethod(IRWriter.cmp, "=="), partialmethod(IRWriter.cmp, "!=")


class _Loop:
    def __init__(self, f: _Fn, cont_bb, brk_bb) -> None:
        self.f, self.cont_bb, self.brk_bb = f, cont_bb, brk_bb

    def brk(self) -> None:
        self.f.jump(self.brk_bb)

    def cont(self) -> None:
        self.f.jump(self.cont_bb)



def _build_ir() -> str:
    m = ll.Module(name="sm_engine")
    F = {name: _Fn(m, name, n) for name, n in (
        ("set_next", 2), ("slot_of", 3), ("arrive", 2), ("release", 2), ("fill", 1),
        ("dispatch", 3), ("group_remove", 1), ("group_set", 2), ("flush", 2), ("wake_group", 1),
        ("cut", 1),
        ("span", 4), (SYMBOL, 0))}

    def call(f: _Fn, name: str, *args):
        return f.b.call(F[name].fn, [f.tab, f.sc, *[a if isinstance(a, ll.Value) else c(a) for a in args]])

    # ---- set_next(s, p): slot s's next item is p
    f = F["set_next"]
    b = f.b
    s, p = f.args
    sp = f.sp(s)
    f.fs(sp, "ptr", p)
    f.st("lz", s, 0)                    # its state changes: the next scan looks at it
    with b.if_else(f.lt(p, f.fl(sp, "end"))) as (then, other):
        with then:
            at, kind = f.it(p, "at"), f.it(p, "kind")
            f.fs(sp, "nat", at)
            f.fs(sp, "nkind", kind)
            f.fs(sp, "memat", b.select(f.eq(kind, MEM), b.add(b.mul(at, c(2)), f.it(p, "pipe")), c(-1)))
            f.fs(sp, "stop", b.select(f.eq(kind, MEM), c(-1), at))
            f.fs(sp, "nline5", b.mul(f.it(p, "line"), c(NR)))
            f.fs(sp, "ncostlat", b.or_(b.shl(f.it(p, "cost"), c(32)),
                                              b.and_(f.it(p, "latency"), c(0xFFFFFFFF))))
            f.fs(sp, "nuse", f.it(p, "use"))
        with other:
            f.fs(sp, "nat", FAR)
            f.fs(sp, "nkind", EXIT)
            f.fs(sp, "memat", -1)
            f.fs(sp, "stop", -1)
    f.ret()
    f.finish()

    # ---- slot_of(sm, r, w): Layout.slot
    f = F["slot_of"]
    b = f.b
    sm, r, w = f.args
    S, K = f.get("S"), f.get("K")
    L = b.add(b.mul(r, f.get("nw")), w)
    f.ret(b.add(b.mul(b.add(b.mul(sm, S), b.srem(L, S)), K), b.sdiv(L, S)))
    f.finish()

    # ---- flush(s, t): slot s's current reason ends before cycle t: count its span
    f = F["flush"]
    b = f.b
    s, t = f.args
    sp = f.sp(s)
    cur = f.fl(sp, "cur")
    with b.if_then(f.ge(cur, 0)):
        d = b.sub(t, f.fl(sp, "since"))
        f.add_to("by_row", cur, d)
        ap = b.gep(sp["cold"], [b.add(c(F_["acc0"][1]), f.fl(sp, "curr"))])  # noqa: E501
        b.store(b.add(b.load(ap), d), ap)
        f.fs(sp, "cur", -1)
    f.ret()
    f.finish()

    # ---- cut(g): scheduler g's warp issues no more of its run after this cycle (`rend`)
    f = F["cut"]
    b = f.b
    (g,) = f.args
    now1 = b.add(f.get("now"), c(1))
    rest = b.sub(f.ld("rend", g), now1)    # the run's instructions due after this cycle
    with b.if_then(f.gt(rest, 0)):
        sp = f.sp(f.ld("fast", g))
        f.fs(sp, "ic", b.sub(f.fl(sp, "ic"), rest))
        f.fs(sp, "ready", b.add(f.get("now"), f.get("alu")))
        f.add_to("issued", b.sdiv(g, f.get("S")), b.sub(c(0), rest))
        f.st("rend", g, now1)
        f.st("wake", g, now1)
    f.ret()
    f.finish()

    # ---- wake_group(s): look at slot s's scheduler again next cycle
    f = F["wake_group"]
    b = f.b
    (s,) = f.args
    g = b.sdiv(s, f.get("K"))
    call(f, "cut", g)
    f.st("wake", g, f.min(f.ld("wake", g), b.add(f.get("now"), c(1))))
    f.st("fast", g, -1)
    f.ret()
    f.finish()

    # ---- span(s, t, idx, reason): from cycle t on, slot s stalls for `reason`, counted at
    # by_row[idx] (5 x row + reason)
    f = F["span"]
    b = f.b
    s, t, idx, reason = f.args
    sp = f.sp(s)
    call(f, "flush", s, t)
    f.fs(sp, "cur", idx)
    f.fs(sp, "curr", reason)
    f.fs(sp, "since", t)
    f.ret()
    f.finish()

    # ---- group_set(s, v): slot s's entry in its scheduler's list becomes v (s, or -1 - s at a
    # barrier), its place's bit in the barrier mark so
    f = F["group_set"]
    b = f.b
    s, v = f.args
    K = f.get("K")
    g = b.sdiv(s, K)
    i = f.ld("pos", s)
    f.st("order", b.add(b.mul(g, K), i), v)
    bit = b.shl(c(1), i)
    mv = f.ld("barm", g)
    f.st("barm", g, b.select(f.lt(v, 0), b.or_(mv, bit), b.and_(mv, b.not_(bit))))
    f.ret()
    f.finish()

    # ---- group_remove(s): drop slot s from its scheduler's list (kept in dispatch order)
    f = F["group_remove"]
    b = f.b
    (s,) = f.args
    K = f.get("K")
    g = b.sdiv(s, K)
    base = b.mul(g, K)
    n = f.ld("cnt", g)
    j = f.ld("pos", s)
    with f.loop(j, b.sub(n, c(1))) as (i, lp):
        e = f.ld("order", b.add(base, b.add(i, c(1))))
        f.st("order", b.add(base, i), e)
        f.st("pos", b.select(f.lt(e, 0), b.sub(c(-1), e), e), i)
    f.st("cnt", g, b.sub(n, c(1)))
    low = b.sub(b.shl(c(1), j), c(1))         # the marks' bits above j move down one place
    for mark in ("barm", "rnsm"):
        mv = f.ld(mark, g)
        f.st(mark, g, b.or_(b.and_(mv, low), b.and_(b.lshr(mv, c(1)), b.not_(low))))
    f.ret()
    f.finish()

    # ---- dispatch(b, sm, t)
    f = F["dispatch"]
    b = f.b
    blk, sm, t = f.args
    B, nw, K = f.get("B"), f.get("nw"), f.get("K")
    born = b.add(f.get("now"), c(1))           # the first cycle the scan sees it
    nf = b.sub(f.ld("nfree", sm), c(1))
    f.st("nfree", sm, nf)
    r = f.ld("freer", b.add(b.mul(sm, B), nf))
    with b.if_then(f.eq(f.ld("resident", sm), 0)):
        f.st("busy_since", sm, born)
    with f.loop(c(0), nw) as (w, lp):
        s = call(f, "slot_of", sm, r, w)
        sp = f.sp(s)
        g = b.add(b.mul(blk, nw), w)
        f.fs(sp, "occ", 1)
        f.fs(sp, "sm", sm)
        f.fs(sp, "gw", g)
        f.fs(sp, "blk", blk)
        f.fs(sp, "ic", 0)
        f.fs(sp, "end", f.ld("wend", g))
        call(f, "set_next", s, f.ld("wbeg", g))
        f.fs(sp, "ready", t)
        f.fs(sp, "dep_pos", FAR)
        f.fs(sp, "dep_ready", 0)
        f.fs(sp, "atbar", 0)
        f.fs(sp, "cur", -1)
        f.fs(sp, "born", born)
        seq = f.get("seq")
        f.fs(sp, "age", seq)
        f.put("seq", b.add(seq, c(1)))
        f.st("wstart", g, t)
        grp = b.sdiv(s, K)
        n = f.ld("cnt", grp)
        f.st("order", b.add(b.mul(grp, K), n), s)
        f.st("pos", s, n)
        f.st("cnt", grp, b.add(n, c(1)))
        call(f, "wake_group", s)
    f.st("bsm", blk, sm)
    f.st("br", blk, r)
    f.st("blive", blk, nw)
    f.st("bbar", blk, 0)
    f.add_to("resident", sm, 1)
    with f.loop(c(0), nw) as (w, lp):
        s = call(f, "slot_of", sm, r, w)
        with b.if_then(f.eq(f.fl(f.sp(s), "blk"), blk)):
            call(f, "arrive", s, t)
    f.ret()
    f.finish()

    # ---- fill(t): dispatch waiting blocks while some SM has room
    f = F["fill"]
    b = f.b
    (t,) = f.args
    M, B, nb = f.get("M"), f.get("B"), f.get("nb")
    with f.while_(lambda: f.lt(f.get("next_block"), nb)) as wl:
        pick = f.var(-1)
        with b.if_else(f.eq(f.get("bpolicy"), 0)) as (rr, least):
            with rr:            # RoundRobinBlocks: the next SM with room after the cursor
                cur = f.get("cursor")
                with f.loop(c(0), M) as (i, lp):
                    sm = b.srem(b.add(b.add(cur, c(1)), i), M)
                    sm = b.select(f.lt(sm, 0), b.add(sm, M), sm)
                    with b.if_then(f.lt(f.ld("resident", sm), B)):
                        b.store(sm, pick)
                        lp.brk()
                with b.if_then(f.ge(b.load(pick), 0)):
                    f.put("cursor", b.load(pick))
            with least:         # LeastLoaded: fewest resident blocks, lowest index on ties
                best = f.var(FAR)
                with f.loop(c(0), M) as (sm, lp):
                    res = f.ld("resident", sm)
                    with b.if_then(b.and_(f.lt(res, B), f.lt(res, b.load(best)))):
                        b.store(res, best)
                        b.store(sm, pick)
        sm = b.load(pick)
        with b.if_then(f.lt(sm, 0)):
            f.ret()
        nxt = f.get("next_block")
        f.put("next_block", b.add(nxt, c(1)))
        call(f, "dispatch", nxt, sm, t)
    f.ret()
    f.finish()

    # ---- arrive(s, t): slot s has issued up to its next BARRIER/EXIT item
    f = F["arrive"]
    b = f.b
    s, t = f.args
    t1 = b.add(t, c(1))
    sp = f.sp(s)
    skip = b.or_(b.or_(f.eq(f.fl(sp, "occ"), 0), f.eq(f.fl(sp, "nkind"), MEM)),
                 b.or_(f.ne(f.fl(sp, "nat"), f.fl(sp, "ic")), f.ne(f.fl(sp, "atbar"), 0)))
    with b.if_then(skip):
        f.ret()
    blk = f.fl(sp, "blk")
    sm = f.ld("bsm", blk)
    call(f, "wake_group", s)
    with b.if_else(f.eq(f.fl(sp, "nkind"), EXIT)) as (ex, bar):
        with ex:
            now1 = b.add(f.get("now"), c(1))
            call(f, "flush", s, now1)
            f.fs(sp, "occ", 0)
            g = f.fl(sp, "gw")
            for k in range(NR):
                f.add_to("stalls", b.add(b.mul(g, c(NR)), c(k)), f.fl(sp, f"acc{k}"))
                f.fs(sp, f"acc{k}", 0)
            f.add_to("active", sm, b.sub(now1, f.fl(sp, "born")))
            call(f, "group_remove", s)
            with b.if_then(f.ne(f.get("timeline"), 0)):
                n = f.get("n_tl_warps")
                base = b.mul(n, c(6))
                nw = f.get("nw")
                for k, v in enumerate((blk, b.srem(g, nw), sm, s, f.ld("wstart", g), t1)):
                    f.st("tl_warps", b.add(base, c(k)), v)
                f.st("tl_wnow", n, f.get("now"))
                f.put("n_tl_warps", b.add(n, c(1)))
            live = b.sub(f.ld("blive", blk), c(1))
            f.st("blive", blk, live)
            with b.if_then(f.eq(live, 0)):
                f.st("sm_end", sm, f.max(f.ld("sm_end", sm), t1))
                nf = f.ld("nfree", sm)
                f.st("freer", b.add(b.mul(sm, f.get("B")), nf), f.ld("br", blk))
                f.st("nfree", sm, b.add(nf, c(1)))
                res = b.sub(f.ld("resident", sm), c(1))
                f.st("resident", sm, res)
                with b.if_then(f.eq(res, 0)):
                    f.add_to("busy", sm, b.sub(now1, f.ld("busy_since", sm)))
                f.put("done", b.add(f.get("done"), c(1)))
                call(f, "fill", t1)
                f.ret()
        with bar:
            f.fs(sp, "atbar", 1)
            f.fs(sp, "bar_since", t1)
            f.add_to("bbar", blk, 1)
            call(f, "group_set", s, b.sub(c(-1), s))      # the scan passes it by
            call(f, "span", s, b.add(f.get("now"), c(1)), b.add(f.fl(sp, "nline5"), c(R_BARRIER)),
                 c(R_BARRIER))
    nbar = f.ld("bbar", blk)
    with b.if_then(b.and_(f.gt(nbar, 0), f.eq(nbar, f.ld("blive", blk)))):
        call(f, "release", blk, t)
    f.ret()
    f.finish()

    # ---- release(b, t): every live warp of block b waits at the barrier: all go on at t + 1
    f = F["release"]
    b = f.b
    blk, t = f.args
    t1 = b.add(t, c(1))
    f.st("bbar", blk, 0)
    sm, r, nw = f.ld("bsm", blk), f.ld("br", blk), f.get("nw")
    with f.loop(c(0), nw) as (w, lp):
        s = call(f, "slot_of", sm, r, w)
        sp = f.sp(s)
        with b.if_then(b.and_(f.ne(f.fl(sp, "occ"), 0), f.ne(f.fl(sp, "atbar"), 0))):
            f.fs(sp, "atbar", 0)
            call(f, "group_set", s, s)
            call(f, "flush", s, b.add(f.get("now"), c(1)))
            call(f, "wake_group", s)
            with b.if_then(f.ne(f.get("timeline"), 0)):
                n = f.get("n_tl_bars")
                base = b.mul(n, c(6))
                for k, v in enumerate((blk, w, sm, s, f.fl(sp, "bar_since"), t1)):
                    f.st("tl_bars", b.add(base, c(k)), v)
                f.st("tl_bnow", n, f.get("now"))
                f.put("n_tl_bars", b.add(n, c(1)))
            call(f, "set_next", s, b.add(f.fl(sp, "ptr"), c(1)))
            f.fs(sp, "ready", f.max(f.fl(sp, "ready"), t1))
    with f.loop(c(0), nw) as (w, lp):
        s = call(f, "slot_of", sm, r, w)
        with b.if_then(f.eq(f.fl(f.sp(s), "blk"), blk)):
            call(f, "arrive", s, t1)
    f.ret()
    f.finish()

    _build_main(F[SYMBOL], call)
    return str(m)


def _random_key(f: _Fn, seed, t, s):
    """warp_policies.random_key(seed, t, s), wrapping 64-bit arithmetic."""
    b = f.b
    x = b.add(b.add(b.mul(seed, c(C1)), b.mul(t, c(C2))), b.mul(s, c(C3)))
    x = b.mul(b.xor(x, b.lshr(x, c(30))), c(C2))
    x = b.mul(b.xor(x, b.lshr(x, c(27))), c(C3))
    return b.lshr(b.xor(x, b.lshr(x, c(31))), c(11))


def _build_main(f: _Fn, call) -> None:
    """The cycle loop. Returns 0, or -1 when no warp can ever issue again (a bug)."""
    b = f.b
    M, S, K, alu = f.get("M"), f.get("S"), f.get("K"), f.get("alu")
    nb, policy, act_n, seed = f.get("nb"), f.get("policy"), f.get("active_n"), f.get("seed")
    tv = f.var(0)
    f.put("now", -1)
    call(f, "fill", c(0))
    any_v, next_v, narr_v, ngi_v, gw_v = f.var(), f.var(), f.var(), f.var(), f.var()
    scans_v = f.var(0)
    best_v, bestkey_v, bestA_v, bestAkey_v, nel_v, sens_v = (f.var() for _ in range(6))
    todo_v, vc_v = f.var(), f.var()

    def cycle(lo, hi, alive):
        """Cycle tv of SMs lo..hi-1: picks, issues, then arrivals; tv = the next cycle
        any of them needs (`alive()`: some block is still to finish there)."""
        t = b.load(tv)
        f.put("now", t)
        f.put("iterations", b.add(f.get("iterations"), c(1)))
        b.store(c(0), any_v)
        b.store(c(FAR), next_v)
        b.store(c(0), narr_v)
        with f.loop(lo, hi) as (sm, lp_sm):
            with b.if_then(f.eq(f.ld("resident", sm), 0)):
                lp_sm.cont()
            pf_lsu = f.ld("pf", b.mul(sm, c(N_PIPES)))
            pf_sh = f.ld("pf", b.add(b.mul(sm, c(N_PIPES)), c(1)))
            with f.loop(c(0), S) as (q, lp_q):
                g = b.add(b.mul(sm, S), q)
                f.st("chosen", q, -1)
                with b.if_then(f.gt(f.ld("wake", g), t)):
                    lp_q.cont()
                # gto, nothing changed but the warp it issued last: that warp again if it can
                fs = f.ld("fast", g)
                with b.if_then(b.and_(f.ge(fs, 0), f.lt(t, f.ld("owake", g)))):
                    sp = f.sp(fs)
                    ic = f.fl(sp, "ic")
                    m2 = f.fl(sp, "memat")
                    pfree = b.select(f.eq(b.and_(m2, c(1)), 0), pf_lsu, pf_sh)
                    blocked = b.or_(b.and_(f.ge(ic, f.fl(sp, "dep_pos")), f.gt(f.fl(sp, "dep_ready"), t)),
                                    b.or_(b.and_(f.eq(b.ashr(m2, c(1)), ic), f.gt(pfree, t)),
                                          f.gt(f.fl(sp, "ready"), t)))
                    with b.if_then(b.not_(blocked)):
                        # a run: its instructions up to the next memory request or the one
                        # that reaches a barrier/exit, while no load it waits for is due and
                        # no other warp's stall ends, issue at t, t + 1, ... (cut short,
                        # `cut`, when an event or a pipe change touches the scheduler)
                        lim = b.select(f.ge(m2, 0), b.ashr(m2, c(1)), b.sub(f.fl(sp, "stop"), c(1)))
                        kv = f.var(b.sub(lim, ic))
                        dr = f.fl(sp, "dep_ready")
                        j0 = b.sub(f.fl(sp, "dep_pos"), ic)
                        with b.if_then(b.and_(f.gt(dr, t), f.lt(j0, b.sub(dr, t)))):
                            b.store(f.min(b.load(kv), j0), kv)
                        k = f.min(b.load(kv), b.sub(f.ld("owake", g), t))
                        with b.if_then(b.and_(f.eq(alu, 1), f.ge(k, 2))):
                            f.fs(sp, "ic", b.add(ic, k))
                            f.fs(sp, "ready", b.add(t, k))
                            f.add_to("issued", sm, k)
                            f.st("wake", g, b.add(t, k))
                            f.st("rend", g, b.add(t, k))
                            lp_q.cont()
                        f.st("chosen", q, fs)
                        f.st("wake", g, b.add(t, c(1)))
                        lp_q.cont()
                base = b.mul(g, K)
                n = f.ld("cnt", g)
                last = f.ld("last", g)
                b.store(c(-1), best_v)
                b.store(c(FAR), bestkey_v)
                b.store(c(-1), bestA_v)
                b.store(c(FAR), bestAkey_v)
                b.store(c(FAR), gw_v)                 # the group's next wake
                b.store(c(0), nel_v)
                b.store(c(0), sens_v)
                b.store(b.add(b.load(scans_v), n), scans_v)

                def consider(s, i, cand):
                    """Ready slot s at position i of the list (the cand-th candidate): the
                    policy's key, the best so far."""
                    k = b.sub(s, base)
                    d = b.sub(b.sub(k, last), c(1))
                    dist = b.select(f.lt(d, 0), b.add(d, K), d)
                    # key: smaller issues first (ties cannot happen but for random keys)
                    key = f.var()
                    with b.if_else(f.eq(policy, 0)) as (gto, other):
                        with gto:       # the last-issued position, else the oldest (first in order)
                            b.store(b.select(f.eq(k, last), c(-1), i), key)
                        with other:
                            with b.if_else(f.eq(policy, 3)) as (rnd, rr):
                                with rnd:   # the largest random key, lowest position on ties
                                    rk = _random_key(f, seed, t, s)
                                    b.store(b.add(b.mul(b.sub(c(1 << 53), rk), K), k), key)
                                with rr:    # lrr and two_level: round-robin distance
                                    b.store(dist, key)
                    kv = b.load(key)
                    with b.if_then(f.lt(kv, b.load(bestkey_v))):
                        b.store(kv, bestkey_v)
                        b.store(s, best_v)
                    with b.if_then(b.and_(f.eq(policy, 2),
                                          b.and_(f.lt(cand, act_n), f.lt(kv, b.load(bestAkey_v))))):
                        b.store(kv, bestAkey_v)
                        b.store(s, bestA_v)

                # The list's entries but those at a barrier and those found ready and not
                # selected at the last look (their marks' bits), in list order
                rm = f.ld("rnsm", g)
                b.store(c(0), vc_v)
                b.store(b.and_(b.select(f.ge(n, MAX_LIST), c(-1), b.sub(b.shl(c(1), n), c(1))),
                               b.not_(b.or_(f.ld("barm", g), rm))), todo_v)

                def cand_before(i):
                    """two_level: the candidates at places before i (all known by then)."""
                    return f.popcount(b.and_(b.or_(rm, b.load(vc_v)), b.sub(b.shl(c(1), i), c(1))))

                with f.while_(lambda: f.ne(b.load(todo_v), 0)) as lp_i:
                    mk = b.load(todo_v)
                    i = b.cttz(mk, ll.Constant(I1, 1))
                    b.store(b.and_(mk, b.sub(mk, c(1))), todo_v)
                    s = f.ld("order", b.add(base, i))
                    sp = f.sp(s)
                    # its reason at the last look holds on (see `lz` at ARRAYS): as then
                    lzv = f.ld("lz", s)
                    with b.if_then(f.gt(b.ashr(lzv, c(1)), t)):
                        b.store(f.min(b.load(gw_v), b.ashr(lzv, c(1))), gw_v)
                        b.store(b.or_(b.load(vc_v), b.shl(b.and_(lzv, c(1)), i)), vc_v)
                        lp_i.cont()

                    def state(reason, row5):
                        """The slot's reason at t; a change closes the previous span."""
                        idx = b.add(row5, c(reason))
                        with b.if_then(f.ne(f.fl(sp, "cur"), idx)):
                            call(f, "span", s, t, idx, c(reason))

                    def stall(reason, row5, wake=None):
                        state(reason, row5)
                        if wake is not None:
                            b.store(f.min(b.load(gw_v), wake), gw_v)
                        lp_i.cont()

                    ic = f.fl(sp, "ic")
                    dr = f.fl(sp, "dep_ready")
                    with b.if_then(b.and_(f.ge(ic, f.fl(sp, "dep_pos")), f.gt(dr, t))):
                        f.st("lz", s, b.mul(dr, c(2)))
                        stall(R_MEMORY, f.fl(sp, "depl5"), dr)
                    # a candidate of two_level's active set: neither waiting for memory nor at a barrier
                    cand = cand_before(i)
                    b.store(b.or_(b.load(vc_v), b.shl(c(1), i)), vc_v)
                    m2 = f.fl(sp, "memat")
                    pfree = b.select(f.eq(b.and_(m2, c(1)), 0), pf_lsu, pf_sh)
                    with b.if_then(b.and_(f.eq(b.ashr(m2, c(1)), ic), f.gt(pfree, t))):
                        stall(R_PIPE, f.fl(sp, "nline5"), pfree)
                    rd = f.fl(sp, "ready")
                    with b.if_then(f.gt(rd, t)):
                        # its next instruction a memory request: a busy pipe would make it a pipe stall
                        psen = f.eq(b.ashr(m2, c(1)), ic)
                        b.store(b.or_(b.load(sens_v), b.zext(psen, I64)), sens_v)
                        f.st("lz", s, b.select(psen, c(0), b.add(b.mul(rd, c(2)), c(1))))
                        stall(R_DEPENDENCY, f.fl(sp, "nline5"), rd)
                    # ready: its span is set below, once the pick is known
                    ne = b.load(nel_v)
                    f.st("elig", ne, s)
                    b.store(b.add(ne, c(1)), nel_v)
                    consider(s, i, cand)
                # Those ready and not selected at the last look stay so (their spans run on):
                # only their keys count. Every key differs, so the order of `consider` does
                # not matter; gto takes the last-issued one (key -1), else the first in the list.
                with b.if_then(f.ne(rm, 0)):
                    with b.if_else(f.eq(policy, 0)) as (gto, other):
                        with gto:
                            sl = b.add(base, f.max(last, c(0)))
                            p = f.ld("pos", sl)
                            has = b.and_(b.and_(f.ge(last, 0), f.eq(f.ld("order", b.add(base, p)), sl)),
                                         f.ne(b.and_(b.lshr(rm, p), c(1)), 0))
                            i = b.select(has, p, b.cttz(rm, ll.Constant(I1, 1)))
                            consider(f.ld("order", b.add(base, i)), i, c(0))
                        with other:
                            b.store(rm, todo_v)
                            with f.while_(lambda: f.ne(b.load(todo_v), 0)):
                                mk = b.load(todo_v)
                                i = b.cttz(mk, ll.Constant(I1, 1))
                                b.store(b.and_(mk, b.sub(mk, c(1))), todo_v)
                                consider(f.ld("order", b.add(base, i)), i, cand_before(i))
                with b.if_then(b.and_(f.eq(policy, 2), f.ge(b.load(bestA_v), 0))):
                    b.store(b.load(bestA_v), best_v)
                ch = b.load(best_v)
                f.st("chosen", q, ch)
                with b.if_then(f.ge(ch, 0)):
                    with b.if_then(f.lt(f.ld("lz", ch), 0)):    # ready since an earlier look
                        call(f, "flush", ch, t)
                        f.st("lz", ch, 0)
                        f.st("rnsm", g, b.and_(f.ld("rnsm", g), b.not_(b.shl(c(1), f.ld("pos", ch)))))
                with f.loop(c(0), b.load(nel_v)) as (i, lp_e):
                    s = f.ld("elig", i)
                    sp = f.sp(s)
                    with b.if_else(f.eq(s, ch)) as (picked, other):
                        with picked:            # issues at t: its stall span, if any, ends
                            call(f, "flush", s, t)
                        with other:             # ready, another warp issues
                            psen = f.eq(b.ashr(f.fl(sp, "memat"), c(1)), f.fl(sp, "ic"))
                            b.store(b.or_(b.load(sens_v), b.zext(psen, I64)), sens_v)
                            idx = b.add(f.fl(sp, "nline5"), c(R_NOT_SELECTED))
                            with b.if_then(f.ne(f.fl(sp, "cur"), idx)):
                                call(f, "span", s, t, idx, c(R_NOT_SELECTED))
                            # its next instruction no memory request: ready until it issues
                            # (nothing but its own issue changes that), the scan takes it so
                            f.st("lz", s, b.select(psen, c(0), c(-1)))
                            f.st("rnsm", g, b.or_(f.ld("rnsm", g), b.shl(b.zext(b.not_(psen), I64),
                                                                          f.ld("pos", s))))
                f.st("wake", g, b.select(f.ge(ch, 0), b.add(t, c(1)), b.load(gw_v)))
                # gto: next cycle, while the other warps' stalls last and no event or pipe
                # change touches them, only the chosen warp needs a look (it issues if it can)
                f.st("fast", g, b.select(f.eq(policy, 0), ch, c(-1)))
                f.st("owake", g, b.load(gw_v))
                f.st("psens", g, b.load(sens_v))
            # issue, in scheduler order
            b.store(c(0), ngi_v)
            with f.loop(c(0), S) as (q, lp_q):
                s = f.ld("chosen", q)
                with b.if_then(f.lt(s, 0)):
                    lp_q.cont()
                sp = f.sp(s)
                b.store(c(1), any_v)
                cnum = f.fl(sp, "ic")
                f.fs(sp, "ic", b.add(cnum, c(1)))
                f.fs(sp, "ready", b.add(t, alu))
                g = b.add(b.mul(sm, S), q)
                f.st("last", g, b.sub(s, b.mul(g, K)))
                f.add_to("issued", sm, 1)
                # the stop points after the next one, read when the next ones issue (often
                # within a few cycles): the cache line after the next one's, asked of the
                # memory now (ptr + 1 is read at once when this issue is the request at ptr)
                f.prefetch(b.add(f.fl(sp, "ptr"), c(2)))
                # the memory requests issued as instruction number cnum
                with b.if_then(f.eq(b.ashr(f.fl(sp, "memat"), c(1)), cnum)):
                    b.store(c(1), ngi_v)          # the SM's pipes change: wake its schedulers
                    pv = f.var(b.add(f.fl(sp, "ptr"), c(1)))
                    e = f.fl(sp, "end")
                    dr_v = f.var(f.fl(sp, "dep_ready"))
                    dp_v = f.var(f.fl(sp, "dep_pos"))
                    d0_v = f.var(b.load(dr_v))

                    def request(pipe, cost, lat, use, line5):
                        j = b.add(b.mul(sm, c(N_PIPES)), pipe)
                        start = f.max(f.ld("pf", j), t)
                        f.st("pf", j, b.add(start, cost))
                        with b.if_then(f.ge(use, 0)):
                            rt = b.add(start, lat)
                            up = b.add(b.add(cnum, c(1)), use)
                            with b.if_else(f.le(b.load(d0_v), t)) as (fresh, more_ld):
                                with fresh:
                                    b.store(up, dp_v)
                                    b.store(rt, dr_v)
                                    b.store(rt, d0_v)
                                    f.fs(sp, "depl5", line5)
                                with more_ld:
                                    b.store(f.min(b.load(dp_v), up), dp_v)
                                    with b.if_then(f.gt(rt, b.load(dr_v))):
                                        b.store(rt, dr_v)
                                        f.fs(sp, "depl5", line5)

                    # the first request: the item at ptr, kept in the slot's records
                    cl = f.fl(sp, "ncostlat")
                    request(b.and_(f.fl(sp, "memat"), c(1)), b.ashr(cl, c(32)),
                            b.sext(b.trunc(cl, I32), I64), f.fl(sp, "nuse"), f.fl(sp, "nline5"))

                    def more():
                        p = b.load(pv)
                        ok = f.var(0)
                        with b.if_then(f.lt(p, e)):
                            b.store(b.zext(b.and_(f.eq(f.it(p, "kind"), MEM), f.eq(f.it(p, "at"), cnum)), I64), ok)
                        return f.ne(b.load(ok), 0)

                    with f.while_(more):    # more requests as the same instruction
                        p = b.load(pv)
                        request(f.it(p, "pipe"), f.it(p, "cost"), f.it(p, "latency"), f.it(p, "use"),
                                b.mul(f.it(p, "line"), c(NR)))
                        b.store(b.add(p, c(1)), pv)
                    f.fs(sp, "dep_ready", b.load(dr_v))
                    f.fs(sp, "dep_pos", b.load(dp_v))
                    call(f, "set_next", s, b.load(pv))
                with b.if_then(f.eq(f.fl(sp, "stop"), b.add(cnum, c(1)))):
                    na = b.load(narr_v)
                    f.st("arr", na, s)
                    b.store(b.add(na, c(1)), narr_v)
            with b.if_then(f.ne(b.load(ngi_v), 0)):
                # a pipe busy at t + 1 (requests queued behind this cycle's, or costing more
                # than a cycle) may stall a warp whose next instruction is a memory request;
                # a pipe free again by t + 1 stalls no one: what the scans found holds
                t1 = b.add(t, c(1))
                busy = f.var(0)
                for k in range(N_PIPES):
                    bk = f.gt(f.ld("pf", b.add(b.mul(sm, c(N_PIPES)), c(k))), t1)
                    b.store(b.or_(b.load(busy), b.zext(bk, I64)), busy)
                with f.loop(b.mul(sm, S), b.mul(b.add(sm, c(1)), S)) as (g, lp_g):
                    # a warp of g may now stall for the pipe: cut g's run, look at all
                    with b.if_else(b.and_(f.ne(f.ld("psens", g), 0), f.ne(b.load(busy), 0))) as (sens, calm):
                        with sens:
                            call(f, "cut", g)
                            f.st("wake", g, f.min(f.ld("wake", g), b.add(t, c(1))))
                            f.st("fast", g, -1)
                        with calm:      # a run goes on as its warp's next issues would
                            with b.if_then(f.le(f.ld("rend", g), b.add(t, c(1)))):
                                f.st("wake", g, f.min(f.ld("wake", g), b.add(t, c(1))))
            # the next cycle due, needed only while nothing issued in this cycle (else t + 1)
            with b.if_then(f.eq(b.load(any_v), 0)):
                with f.loop(b.mul(sm, S), b.mul(b.add(sm, c(1)), S)) as (g, lp_g):
                    b.store(f.min(b.load(next_v), f.ld("wake", g)), next_v)
        with f.loop(c(0), b.load(narr_v)) as (i, lp):
            call(f, "arrive", f.ld("arr", i), t)
        nx = b.select(f.ne(b.load(any_v), 0), b.add(t, c(1)), b.load(next_v))
        # a dispatch or release above wakes its scheduler at t + 1
        with b.if_then(b.and_(alive(), f.ge(nx, FAR))):
            f.put("err", 1)
            f.ret(-1)
        b.store(nx, tv)

    # While blocks wait for room: every SM, cycle by cycle (a block's end lets the next one
    # in; alone = -1). Once every block is dispatched the SMs no longer meet: each runs to
    # its end alone (alone = its number, from cycle t0; its records stay in the cache), and
    # the timeline rows are put back in cycle order afterwards (tl_w0, tl_b0). One loop, so
    # the cycle's code is written once.
    alone, lo_v, hi_v, t0_v = f.var(-1), f.var(), f.var(), f.var()
    with f.while_(lambda: f.ge(c(1), 0)) as wl:         # until the last SM is done (brk)
        run_bb = f.fn.append_basic_block("run")
        a = b.load(alone)
        with b.if_then(f.lt(a, 0)):
            with b.if_then(b.and_(f.lt(f.get("done"), nb), f.lt(f.get("next_block"), nb))):
                b.store(c(0), lo_v)
                b.store(M, hi_v)
                f.jump(run_bb)
            f.put("tl_w0", f.get("n_tl_warps"))
            f.put("tl_b0", f.get("n_tl_bars"))
            b.store(b.load(tv), t0_v)
            b.store(c(0), alone)
            wl.cont()
        with b.if_then(f.ge(a, M)):
            wl.brk()
        with b.if_then(f.eq(f.ld("resident", a), 0)):
            b.store(b.add(a, c(1)), alone)
            b.store(b.load(t0_v), tv)
            wl.cont()
        b.store(a, lo_v)
        b.store(b.add(a, c(1)), hi_v)
        b.branch(run_bb)
        b.position_at_end(run_bb)

        def alive():
            a = b.load(alone)
            return b.select(f.lt(a, 0), f.lt(f.get("done"), nb),
                            f.gt(f.ld("resident", f.max(a, c(0))), 0))

        cycle(b.load(lo_v), b.load(hi_v), alive)
    f.put("scans", b.load(scans_v))
    f.ret()
    f.finish()


_P = ctypes.c_void_p
PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int64, _P, _P)


def _function():
    return engine.native_function(SYMBOL, _build_ir, PROTOTYPE)


def supports(policy, block_policy) -> bool:
    """Whether this engine knows the rules of both policies (built-in classes exactly:
    a subclass may change `pick`, and a user's class runs in the numpy engine)."""
    return type(policy) in WARP_POLICY_CODES and type(block_policy) in BLOCK_POLICY_CODES


class NativeEngine(SMEngine):
    """The native engine: the numpy engine's constructor and result, its own run()."""

    def __init__(self, progs: WarpPrograms, num_sms: int, schedulers: int, blocks_per_sm: int,
                 issue_interval: int, policy, block_policy, nrows: int, seed: int = 0,
                 timeline: bool = True) -> None:
        if not supports(policy, block_policy):
            raise ValueError(f"the native engine has no rule for {policy!r} / {block_policy!r}: "
                             "use sm_engine.SMEngine")
        super().__init__(progs, num_sms, schedulers, blocks_per_sm, issue_interval, policy,
                         block_policy, nrows, seed, timeline)

    def run(self) -> TimingResult:
        lay, P = self.lay, self.p
        M, S, K, B, nw, N, G = lay.M, lay.S, lay.K, lay.B, lay.nw, lay.N, lay.G
        nb, nwarps = P.num_blocks, P.num_warps
        i64 = np.int64
        z = lambda n: np.zeros(max(int(n), 1), i64)  # noqa: E731
        self.policy.reset(G, K)
        self.bpol.reset(M)
        if K > MAX_LIST:        # the scan's list marks hold MAX_LIST places
            return SMEngine.run(self)
        item = P.items          # the recorder's records, when every number fits int32
        if item is None or not item.size or not item.flags.c_contiguous:
            cols = (P.at, P.kind, P.pipe, P.cost, P.latency, P.use, P.line)
            if any(col.size and (col.min() < -2**31 or col.max() >= 2**31) for col in cols):
                return SMEngine.run(self)
            item = aligned_zeros((max(P.at.size, 1), ITEM_W), np.int32)
            for j, col in enumerate(cols):
                item[:col.size, j] = col
        arrays = {"item": item, "wbeg": np.ascontiguousarray(P.start, dtype=i64),
                  "wend": np.ascontiguousarray(P.end, dtype=i64)}
        arrays = {k: v if v.size else z(1) for k, v in arrays.items()}
        for rec, w in RECORD_W.items():
            arrays[rec] = aligned_zeros((max(N, 1), w))
        arrays["lz"] = z(N)
        arrays["cold"][:, F_["blk"][1]] = -1
        arrays["hot"][:, F_["cur"][1]] = -1
        arrays["last"] = np.full(G, -1, i64)
        arrays["barm"], arrays["rnsm"], arrays["pos"] = z(G), z(G), z(N)
        arrays["cnt"] = z(G)
        arrays["order"] = z(G * K)
        arrays["chosen"] = z(S)
        arrays["wake"] = np.full(G, FAR, i64)
        arrays["elig"] = z(K)
        arrays["fast"] = np.full(G, -1, i64)
        arrays["owake"], arrays["psens"], arrays["rend"] = z(G), z(G), z(G)
        for name in ("bsm", "br", "blive", "bbar"):
            arrays[name] = z(nb)
        arrays["resident"] = z(M)
        arrays["nfree"] = np.full(M, B, i64)
        arrays["freer"] = np.tile(np.arange(B - 1, -1, -1, dtype=i64), M)
        arrays["pf"] = z(M * N_PIPES)
        for name in ("issued", "busy", "busy_since", "active", "sm_end"):
            arrays[name] = z(M)
        arrays["stalls"] = z(nwarps * NR)
        arrays["wstart"] = z(nwarps)
        arrays["by_row"] = z(self.nrows * NR)
        nbar_items = int(np.count_nonzero(P.kind == BARRIER))
        arrays["tl_warps"] = z(nwarps * 6 if self.timeline else 1)
        arrays["tl_bars"] = z(nbar_items * 6 if self.timeline else 1)
        arrays["tl_wnow"] = z(nwarps if self.timeline else 1)
        arrays["tl_bnow"] = z(nbar_items if self.timeline else 1)
        arrays["arr"] = z(G)
        tab = np.array([arrays[name].ctypes.data for name in ARRAYS], dtype=np.uint64)
        sc = np.zeros(len(SCALARS), i64)
        pol = self.policy
        vals = dict(M=M, S=S, K=K, B=B, nw=nw, nb=nb, alu=self.alu, policy=WARP_POLICY_CODES[type(pol)],
                    active_n=int(getattr(pol, "active", 0)), seed=signed64(self.seed),
                    bpolicy=BLOCK_POLICY_CODES[type(self.bpol)], timeline=int(bool(self.timeline)),
                    cursor=-1)
        for k, v in vals.items():
            sc[S_[k]] = v
        fn = _function()
        t0 = time.process_time()
        rc = fn(tab.ctypes.data, sc.ctypes.data) if nb else 0
        self.native_seconds = time.process_time() - t0
        if rc != 0:
            raise RuntimeError("timing engine: no warp can issue again (an engine bug)")
        self.iterations, self.scans = int(sc[S_["iterations"]]), int(sc[S_["scans"]])
        full = lambda a: np.concatenate([a[:M], np.zeros(self.num_sms - M, i64)])  # noqa: E731
        sm_end = full(arrays["sm_end"])
        issued = full(arrays["issued"])
        warps = bars = np.zeros((0, 6), i64)
        if self.timeline:           # rows as arrays: timeline.py reads them when asked
            nt, nbw = int(sc[S_["n_tl_warps"]]), int(sc[S_["n_tl_bars"]])
            warps = _in_cycle_order(arrays["tl_warps"][:nt * 6].reshape(-1, 6), arrays["tl_wnow"][:nt],
                                    int(sc[S_["tl_w0"]]))
            bars = _in_cycle_order(arrays["tl_bars"][:nbw * 6].reshape(-1, 6), arrays["tl_bnow"][:nbw],
                                   int(sc[S_["tl_b0"]]))
        return TimingResult(
            cycles=int(sm_end.max(initial=0)), sm_cycles=sm_end, issued=issued,
            schedulers_per_sm=S, stalls=arrays["stalls"][:nwarps * NR].reshape(nwarps, NR),
            stalls_by_row=arrays["by_row"].reshape(self.nrows, NR),
            idle=full(arrays["busy"]) * S - issued,
            active_warp_cycles=full(arrays["active"]), blocks_per_sm=B, warps=warps,
            barrier_waits=bars)


def _in_cycle_order(rows: np.ndarray, now: np.ndarray, k: int) -> np.ndarray:
    """Timeline rows from k on (written SM after SM) in the order of the cycle loop: by the
    cycle that wrote them, then by SM (stable: each SM's own order kept)."""
    if rows.shape[0] <= k + 1:
        return rows
    order = np.lexsort((rows[k:, 2], now[k:]))
    return np.concatenate([rows[:k], rows[k:][order]])


def engine_for(policy, block_policy):
    """The engine class time_launch uses: native when it has both policies' rules."""
    return NativeEngine if supports(policy, block_policy) else SMEngine
