"""The set-associative LRU walk of gpuemu/memory/cache.py, as native code.

One call looks up a whole batch of (key, sector bits) entries in issue order,
exactly as `cache.lru_reference` does one access at a time (tests/test_cache.py
checks the two agree), so the cache model costs no Python per access. The
state lives in numpy arrays the caller owns, one row of `assoc` ways per
set that has been looked up (a launch touching a few lines of a 50 MB L2
pays for those sets only):

    row_of int32[sets]         row + 1 of each set, 0: no row yet
    meta  int64[3]             rows in use, sectors hit, sectors asked
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
meta[1] += sectors that hit (bits of out), meta[2] += sectors asked (bits).

Since a miss fills the first empty way and no access empties one, the
ways in use are always a row's first ones (a helper that empties ways,
as tests/test_cache.py's invalidate does, must close the gap): a lookup
reads the keys only up to the first empty way and the times only of a
full row's ways when it misses; a fresh row has only its keys set (an
empty way's valid bits and time are never read). A vecadd of 1M threads,
whose 98K requests each open a fresh L2 row, walks its caches in about
35% less CPU than when every lookup read all 16 ways' keys and times and
a fresh row wrote all three planes.

`emit_lru_access` writes the rule for one entry; the batch walk here and
native_cache_walk (the caches of a whole batch of requests) call it. Built
with llvmlite (engine.native_function) once per process; ctypes releases
the GIL for the call.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import engine
from gpuemu.timing import record_pool

from .native_ir import I8, I32, Fn, c, prototype

SYMBOL = "gpuemu_lru_access_rows"
LRU_ARGS = ("key", "bits", "alloc", "set", "t", "row_of", "tags", "valid", "last", "assoc", "meta")
WALK_ARGS = ("n", "keys", "bits", "alloc", "sets", "t0", "tags", "valid", "last", "assoc", "out",
             "row_of", "meta")


def emit_lru_access(module) -> Fn:
    """The rule above for one entry, as an internal function of `module`:
    lru_access(key, bits, alloc, set, t, row_of, tags, valid, last, assoc,
    meta) -> its hit bits; meta[0] rows in use, meta[1] += sectors hit,
    meta[2] += sectors asked. The batch walk below and native_cache_walk call it."""
    f = Fn(module, "lru_access", LRU_ARGS, internal=True)
    A, b = f.arg, f.b
    row_of, meta = f.ptr("row_of", I32), f.ptr("meta")
    tags, valid, last = f.ptr("tags"), f.ptr("valid"), f.ptr("last")
    assoc, key, bits, t = A["assoc"], A["key"], A["bits"], A["t"]
    with f.if_(f.cmp("==", f.ld(row_of, A["set"]), 0)):     # the set's first use: the next row, empty
        fresh = b.add(f.ld(meta, 0), c(1))
        f.st(meta, 0, fresh)
        f.st(row_of, A["set"], fresh)
        fbase = b.mul(b.sub(fresh, c(1)), assoc)
        with f.loop(0, assoc) as w:                  # (an empty way's valid bits and time are never read)
            f.st(tags, b.add(fbase, w), -1)
    base = b.mul(b.sub(f.ld(row_of, A["set"]), c(1)), assoc)
    f.add_to(meta, 2, f.popcount(bits))
    # the ways in use are the row's first ones (a miss fills the first empty
    # way, and nothing here empties one): the key is among them or nowhere,
    # and the row is full when no way is empty
    w = f.var(0)

    def passing():
        """Way w is in the row, in use, and not the key (w past the row reads its last way)."""
        tg = f.ld(tags, b.add(base, f.min(f.get(w), b.sub(assoc, c(1)))))
        return b.and_(f.cmp("<", f.get(w), assoc), b.and_(f.cmp("!=", tg, key), f.cmp("!=", tg, -1)))
    with f.while_(passing):
        f.inc(w)
    slot = b.add(base, f.get(w))
    inrow = f.cmp("<", f.get(w), assoc)
    alloc = f.cmp("!=", A["alloc"], 0)
    with f.if_(inrow):
        with f.if_(f.cmp("==", f.ld(tags, slot), key)):      # hit
            old = f.ld(valid, slot)
            got = b.and_(old, bits)
            f.add_to(meta, 1, f.popcount(got))
            f.st(valid, slot, b.select(alloc, b.or_(old, bits), old))
            f.st(last, slot, t)
            f.ret(got)
    with f.if_(alloc):                                       # miss: fill the first empty way, else the LRU one
        way = f.var(slot)
        with f.if_(b.not_(inrow)):
            victim, vtime = f.var(base), f.var(f.ld(last, base))
            with f.loop(1, assoc) as v:
                lt = f.ld(last, b.add(base, v))
                with f.if_(f.cmp("<", lt, f.get(vtime))):
                    f.set(victim, b.add(base, v))
                    f.set(vtime, lt)
            f.set(way, f.get(victim))
        f.st(tags, f.get(way), key)
        f.st(valid, f.get(way), bits)
        f.st(last, f.get(way), t)
    f.ret(0)
    f.finish()
    return f


def _build_ir() -> str:
    m = ll.Module(name="lru")
    lru = emit_lru_access(m)
    f = Fn(m, SYMBOL, WALK_ARGS)
    A = f.arg
    with f.loop(0, A["n"]) as i:
        hit = f.call(lru, f.ld(f.ptr("keys"), i), f.ld(f.ptr("bits"), i), f.ldu(f.ptr("alloc", I8), i),
                     f.ld(f.ptr("sets"), i), f.b.add(A["t0"], i), A["row_of"], A["tags"], A["valid"],
                     A["last"], A["assoc"], A["meta"])
        f.st(f.ptr("out"), i, hit)
    f.finish()
    return str(m)


def _function():
    return engine.native_function(SYMBOL, _build_ir, prototype(len(WALK_ARGS)))


GROWN: dict = {}    # (sets, ways) -> the most rows a state of that geometry grew to (LruState.reserve)


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
        self.nbytes = self.row_of.nbytes      # its arrays' bytes (kept up to date by reserve)

    @property
    def rows(self) -> int:
        return int(self.meta[0])

    def reserve(self, m: int) -> None:
        """Room for m more rows (at most every set). The planes come from
        record_pool: a launch's caches start empty and grow to megabytes (an
        H100's L2 9.4 MB, its L1s 5 MB), and fresh memory costs a page fault
        and the kernel's zeroing per page (3 us a page on our machine) where
        the storage of the last launch's caches, given back to the pool when
        they died, is already mapped. (One worker's malloc happens to reuse
        it; on two workers' threads it did not: up to 1,000 faults a launch.)

        They grow by doubling (at least to what is needed), or at once to
        the most rows a state of this geometry grew to before (GROWN) when
        the rows needed are a sixteenth of that or more: a launch like an
        earlier one needs its rows again, and each growth copies the rows in
        use. Block workers charge small batches first (their first ranges
        are short), so an H100's L2 and L1s grew three times a launch, 2-3
        ms of copying and fresh pages on the ordered step, where one
        worker's first batch took every set at once. (A launch of a
        sixteenth of the rows or more keeps a large state: launch_plan then
        gives its planes back between launches, `release`; vecadd launches
        of 4K to 64K threads after one of 1M took the same CPU here either
        way.)"""
        n, cap = int(self.meta[0]), self.planes.shape[1]
        need = min(n + m, self.num_sets)
        if need > cap:
            key = (self.num_sets, self.assoc)
            grown_to = GROWN.get(key, 0)
            want = max(2 * cap, need, 64)
            if 16 * need >= grown_to:
                want = max(want, grown_to)
            cap = max(cap, min(want, self.num_sets))
            if cap > grown_to:
                GROWN[key] = cap
            # a row is set when its set is first used: the storage's old contents never show
            grown = record_pool.records(3 * cap, self.assoc, np.int64).reshape(3, cap, self.assoc)
            grown[:, :n] = self.planes[:, :n]
            self.planes = grown
            self.nbytes = self.row_of.nbytes + grown.nbytes
            p, plane = grown.ctypes.data, cap * self.assoc * 8
            self._ptrs = (p, p + plane, p + 2 * plane)

    def release(self) -> None:
        """A cold state (as a new one: no set has a row, no counts) whose
        planes go back to record_pool, keeping row_of: it holds only its
        sets' row numbers. Where rows are in use every set's number is
        zeroed (a memset: cheaper than finding the rows' sets, as the
        native reset does, when they are many; for vecadd 1M's L1 and L2,
        40,000 rows, that walk took some 200 us). `reserve` takes planes
        again when rows are next needed (at once to the most rows this
        geometry grew to, GROWN)."""
        if int(self.meta[0]):
            self.row_of.fill(0)
        self.meta.fill(0)
        self.planes = np.zeros((3, 0, self.assoc), dtype=np.int64)
        self._ptrs = None
        self.nbytes = self.row_of.nbytes


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
                    int(t0), tags, valid, last, state.assoc, out.ctypes.data, row_of, meta)
    return out

