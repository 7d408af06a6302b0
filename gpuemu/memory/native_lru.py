"""The set-associative LRU walk of gpuemu/memory/cache.py, as native code.

One call looks up a whole batch of (key, sector bits) entries in issue order,
exactly as `cache.lru_reference` does one access at a time (tests/test_cache.py
checks the two agree), so the cache model costs no Python per access. The
state lives in numpy arrays the caller owns, one row of `assoc` ways per
set that has been looked up (a launch touching a few lines of a 50 MB L2
pays for those sets only):

    row_of int32[sets]         row + 1 of each set, 0: no row yet
    rows   int64               rows in use
    tags  int64[rows, assoc]   resident key, -1 for an empty way
    valid int64[rows, assoc]   valid sector bits of the line
    last  int64[rows, assoc]   time of the last use (LRU order)

Entry i, in set s = sets[i], at time t0 + i (a set without a row first
gets the next row, every way empty):
  hit (a way holds the key): out = valid & bits; an allocating entry adds
      its bits to the valid ones; the way's time becomes t.
  miss, allocating: the first empty way, else the least recently used one,
      takes the key with only the entry's bits valid; out = 0.
  miss, not allocating: nothing changes; out = 0.
counts[0] += sectors that hit (bits of out), counts[1] += sectors asked (bits).

Built with llvmlite (the JIT gpuemu already uses) once per process; ctypes
releases the GIL for the call.
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import engine

I8, I64 = ll.IntType(8), ll.IntType(64)
P64 = I64.as_pointer()
SYMBOL = "gpuemu_lru_access_rows"

def _build_ir() -> str:
    m = ll.Module(name="lru")
    I32 = ll.IntType(32)
    ft = ll.FunctionType(ll.VoidType(), [I64, P64, P64, I8.as_pointer(), P64, I64,
                                         P64, P64, P64, I64, P64, I32.as_pointer(), P64, P64])
    fn = ll.Function(m, ft, SYMBOL)
    n, keys, bits, alloc, sets, t0, tags, valid, last, assoc, out, row_of, rows, counts = fn.args
    ctpop = m.declare_intrinsic("llvm.ctpop", [I64])
    c = lambda v: ll.Constant(I64, v)  # noqa: E731
    entry = fn.append_basic_block("entry")
    b = ll.IRBuilder(entry)
    i_v = b.alloca(I64, name="i")
    w_v = b.alloca(I64, name="w")
    found_v = b.alloca(I64, name="found")
    empty_v = b.alloca(I64, name="empty")
    victim_v = b.alloca(I64, name="victim")
    vtime_v = b.alloca(I64, name="vtime")
    b.store(c(0), i_v)
    loop = fn.append_basic_block("loop")
    body = fn.append_basic_block("body")
    done = fn.append_basic_block("done")
    b.branch(loop)

    b.position_at_end(loop)
    i = b.load(i_v)
    b.cbranch(b.icmp_signed("<", i, n), body, done)

    b.position_at_end(body)
    key = b.load(b.gep(keys, [i]))
    bt = b.load(b.gep(bits, [i]))
    al = b.icmp_unsigned("!=", b.load(b.gep(alloc, [i])), ll.Constant(I8, 0))
    rp = b.gep(row_of, [b.load(b.gep(sets, [i]))])
    with b.if_then(b.icmp_signed("==", b.load(rp), ll.Constant(I32, 0))):
        fresh = b.add(b.load(rows), c(1))           # the set's first use: the next row, empty
        b.store(fresh, rows)
        b.store(b.trunc(fresh, I32), rp)
        fbase = b.mul(b.sub(fresh, c(1)), assoc)
        b.store(c(0), w_v)
        init = fn.append_basic_block("init")
        init_body = fn.append_basic_block("init_body")
        init_done = fn.append_basic_block("init_done")
        b.branch(init)
        b.position_at_end(init)
        wi = b.load(w_v)
        b.cbranch(b.icmp_signed("<", wi, assoc), init_body, init_done)
        b.position_at_end(init_body)
        slot0 = b.add(fbase, wi)
        b.store(c(-1), b.gep(tags, [slot0]))
        b.store(c(0), b.gep(valid, [slot0]))
        b.store(c(0), b.gep(last, [slot0]))
        b.store(b.add(wi, c(1)), w_v)
        b.branch(init)
        b.position_at_end(init_done)
    base = b.mul(b.sub(b.sext(b.load(rp), I64), c(1)), assoc)
    t = b.add(t0, i)
    hp, ap = b.gep(counts, [c(0)]), b.gep(counts, [c(1)])
    b.store(b.add(b.load(ap), b.call(ctpop, [bt])), ap)
    for v, x in ((w_v, 0), (found_v, -1), (empty_v, -1), (victim_v, -1), (vtime_v, (1 << 63) - 1)):
        b.store(c(x), v)
    scan = fn.append_basic_block("scan")
    scan_body = fn.append_basic_block("scan_body")
    is_hit = fn.append_basic_block("is_hit")
    not_key = fn.append_basic_block("not_key")
    older = fn.append_basic_block("older")
    scan_next = fn.append_basic_block("scan_next")
    decide = fn.append_basic_block("decide")
    b.branch(scan)

    b.position_at_end(scan)
    w = b.load(w_v)
    b.cbranch(b.icmp_signed("<", w, assoc), scan_body, decide)

    b.position_at_end(scan_body)
    slot = b.add(base, w)
    tg = b.load(b.gep(tags, [slot]))
    b.cbranch(b.icmp_signed("==", tg, key), is_hit, not_key)

    b.position_at_end(is_hit)
    b.store(slot, found_v)
    b.branch(decide)

    b.position_at_end(not_key)
    empty_here = b.icmp_signed("==", tg, c(-1))
    with b.if_then(b.and_(empty_here, b.icmp_signed("==", b.load(empty_v), c(-1)))):
        b.store(slot, empty_v)
    lt = b.load(b.gep(last, [slot]))
    b.cbranch(b.and_(b.not_(empty_here), b.icmp_signed("<", lt, b.load(vtime_v))), older, scan_next)

    b.position_at_end(older)
    b.store(slot, victim_v)
    b.store(lt, vtime_v)
    b.branch(scan_next)

    b.position_at_end(scan_next)
    b.store(b.add(w, c(1)), w_v)
    b.branch(scan)

    b.position_at_end(decide)
    f = b.load(found_v)
    hit_bb = fn.append_basic_block("hit")
    miss_bb = fn.append_basic_block("miss")
    fill_bb = fn.append_basic_block("fill")
    nxt = fn.append_basic_block("next")
    b.cbranch(b.icmp_signed(">=", f, c(0)), hit_bb, miss_bb)

    b.position_at_end(hit_bb)
    vp = b.gep(valid, [f])
    old = b.load(vp)
    got = b.and_(old, bt)
    b.store(got, b.gep(out, [i]))
    b.store(b.add(b.load(hp), b.call(ctpop, [got])), hp)
    b.store(b.select(al, b.or_(old, bt), old), vp)
    b.store(t, b.gep(last, [f]))
    b.branch(nxt)

    b.position_at_end(miss_bb)
    b.store(c(0), b.gep(out, [i]))
    b.cbranch(al, fill_bb, nxt)

    b.position_at_end(fill_bb)
    e = b.load(empty_v)
    way = b.select(b.icmp_signed(">=", e, c(0)), e, b.load(victim_v))
    b.store(key, b.gep(tags, [way]))
    b.store(bt, b.gep(valid, [way]))
    b.store(t, b.gep(last, [way]))
    b.branch(nxt)

    b.position_at_end(nxt)
    b.store(b.add(i, c(1)), i_v)
    b.branch(loop)

    b.position_at_end(done)
    b.ret_void()
    return str(m)


_P, _N = ctypes.c_void_p, ctypes.c_int64
PROTOTYPE = ctypes.CFUNCTYPE(None, _N, _P, _P, _P, _P, _N, _P, _P, _P, _N, _P, _P, _P, _P)


def _function():
    return engine.native_function(SYMBOL, _build_ir, PROTOTYPE)


class LruState:
    """The state arrays of one cache (see the module docstring): row_of, and
    tags/valid/last as the three planes of one array, grown by doubling when
    a batch might need more rows than they hold."""

    def __init__(self, num_sets: int, assoc: int) -> None:
        self.num_sets, self.assoc = num_sets, assoc
        self.row_of = np.zeros(num_sets, dtype=np.int32)
        self.meta = np.zeros(3, dtype=np.int64)      # rows in use, sectors hit, sectors asked
        self.planes = np.zeros((3, 0, assoc), dtype=np.int64)
        self._fixed = (self.row_of.ctypes.data, self.meta.ctypes.data)
        self._ptrs = None

    @property
    def rows(self) -> int:
        return int(self.meta[0])

    def reserve(self, m: int) -> None:
        """Room for m more rows (at most every set)."""
        n, cap = int(self.meta[0]), self.planes.shape[1]
        need = min(n + m, self.num_sets)
        if need > cap:
            cap = max(cap, min(max(2 * cap, need, 64), self.num_sets))
            grown = np.zeros((3, cap, self.assoc), dtype=np.int64)
            grown[0] = -1
            grown[:, :n] = self.planes[:, :n]
            self.planes = grown
            p, plane = grown.ctypes.data, cap * self.assoc * 8
            self._ptrs = (p, p + plane, p + 2 * plane)


def lru_walk(state: LruState, keys: np.ndarray, bits: np.ndarray, alloc: np.ndarray,
             sets: np.ndarray, t0: int, check: bool = True) -> np.ndarray:
    """Walk the entries in order, updating `state`; the hit bits of each.

    keys, bits, sets int64[M] (sets < state.num_sets; `check` False: the
    caller made them so), alloc uint8[M]."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    bits = np.ascontiguousarray(bits, dtype=np.int64)
    sets = np.ascontiguousarray(sets, dtype=np.int64)
    alloc = np.ascontiguousarray(alloc, dtype=np.uint8)
    m = keys.size
    if check:
        if not (bits.size == sets.size == alloc.size == m):
            raise ValueError("keys, bits, alloc and sets must have one entry each")
        if m and (sets.min() < 0 or sets.max() >= state.num_sets):
            raise ValueError("set index out of range")
    out = np.empty(m, dtype=np.int64)
    if m:
        state.reserve(m)
        tags, valid, last = state._ptrs
        row_of, meta = state._fixed
        _function()(m, keys.ctypes.data, bits.ctypes.data, alloc.ctypes.data, sets.ctypes.data,
                    int(t0), tags, valid, last, state.assoc, out.ctypes.data, row_of, meta,
                    meta + 8)
    return out
