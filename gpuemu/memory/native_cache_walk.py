"""The caches of global and local requests in issue order, in native code:
the order-dependent part of charging them (MemorySystem._apply_global is
the numpy path, cache.lru_reference the readable LRU rule;
tests/test_request_table.py checks the paths agree).

Per request (its sectors from native_coalescer, ascending), by the kind of
its table row:
  0 a load through L1, 3 a local store kept in L1: one access per L1 line
    it touches (the bits of its L1 sectors), allocating, in the SM's L1; a
    load's L1 sectors that miss send all their 32-byte sectors to L2;
  1 a load straight to L2, 2 a write at L2 (stores, atomics, reductions):
    every sector goes to L2.
L2 sees, per request, one access per L2 line with the bits of the sectors
sent there (allocating). A load counts l1_hits / l1_misses (its sectors, by
their L1 sector), l2_read (sectors sent to L2), l2_hits, dram (= l2_read -
l2_hits). Cycles: sectors by the level that served them, writes at L2,
local stores at L1; latency: the slowest level a load reached (a write: L2,
a local store: L1). Both caches use native_lru's one-access rule.

The lookups of one request follow one another (a set's row number, then
its row), and so did those of successive requests: each waited for its
host cache misses alone. The walk knows the requests ahead, so it asks the
host to fetch the row number of the sets that request i + 16's first
sector falls in, and the rows of request i + 8's (prefetch hints: they
change nothing but when memory arrives), and the misses of several
lookups overlap (vecadd 1M's walk inside a launch: about 30% less CPU).
A build of the walk that logs every prefetch's address (LOGGED_SYMBOL,
`cache_walk(prefetch_log=)`) lets tests/test_native_cache_walk.py see them.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import packed_call
from gpuemu.jit.engine import address

from .native_coalescer import emit_selected
from .native_ir import I8, I32, I64, Fn, c
from .native_lru import emit_lru_access
from .request_table import BATCH_ARGS, COL, NC, batch_addresses, emit_request

SYMBOL = "gpuemu_cache_walk"
LOGGED_SYMBOL = "gpuemu_cache_walk_logged"    # the same walk, logging its prefetches (tests)
LOG_ARGS = ("log", "log_len")
# how many requests ahead the walk prefetches the row numbers of the sets a
# request will look up, then their rows (module docstring)
PREFETCH_ROW_OF, PREFETCH_ROWS = 16, 8
CACHE_ARGS = ("row_of", "tags", "valid", "last", "assoc", "meta", "sets")
ARGS = (BATCH_ARGS + ("glob", "local", "start", "sec", "kind", "nsm", "k1_log", "spl1_log", "spl2_log",
                      "cl1", "cl2", "cdram", "lat1", "lat2", "latdram", "cycles", "latency", "table", "clock")
        + tuple(f"l1_{a}" for a in CACHE_ARGS) + tuple(f"l2_{a}" for a in CACHE_ARGS))


def _build_ir(log: bool = False) -> str:
    """The walk; `log`: LOGGED_SYMBOL, which also writes the address of
    every prefetch into log[0..] (log_len: their count), so a test sees them."""
    m = ll.Module(name="cache_walk")
    lru = emit_lru_access(m)
    f = Fn(m, LOGGED_SYMBOL if log else SYMBOL, ARGS + LOG_ARGS if log else ARGS)
    A, b = f.arg, f.b
    sec, start, table, clock = f.ptr("sec"), f.ptr("start"), f.ptr("table"), f.ptr("clock")
    # sector and line counts are powers of two (applies()): shifts and masks, no divisions
    k1s, spl1s, spl2s, P = A["k1_log"], A["spl1_log"], A["spl2_log"], A["nsm"]
    k1 = b.shl(c(1), k1s)
    low = lambda v, s: b.and_(v, b.sub(b.shl(c(1), s), c(1)))  # noqa: E731  (v mod 2**s)
    l1sec = lambda s: b.ashr(s, k1s)                             # noqa: E731  32-byte sector -> L1 sector

    def access(level, key, bits, set_):
        """One allocating access of cache `level` ('l1'/'l2'); its hit bits. clock[0/1]: its time."""
        ti = 0 if level == "l1" else 1
        t = f.ld(clock, ti)
        f.st(clock, ti, b.add(t, c(1)))
        return f.call(lru, key, bits, 1, set_, t, *(A[f"{level}_{a}"] for a in CACHE_ARGS[:-1]))

    prefetch_fn = ll.Function(m, ll.FunctionType(ll.VoidType(), [I8.as_pointer(), I32, I32, I32]),
                              "llvm.prefetch.p0")

    def prefetch(p, idx):
        """A hint to load p[idx] into the host's caches (read, kept: locality 3, data)."""
        at = b.gep(p, [idx])
        f.b.call(prefetch_fn, [b.bitcast(at, I8.as_pointer()), ll.Constant(I32, 0),
                               ll.Constant(I32, 3), ll.Constant(I32, 1)])
        if log:
            k = f.ld(f.ptr("log_len"), 0)
            f.st(f.ptr("log"), k, b.ptrtoint(at, I64))
            f.st(f.ptr("log_len"), 0, b.add(k, c(1)))

    def ahead(j, rows: bool):
        """Prefetch what request j's first sector will look up in each cache:
        its set's row number (rows False), or that row's keys, valid bits and times."""
        with f.if_(f.cmp("<", j, A["n"])):
            a0 = f.ld(start, j)
            with f.if_(f.cmp("<", a0, f.ld(start, b.add(j, c(1))))):
                s = f.ld(sec, a0)
                sets = {"l2": b.urem(b.ashr(s, spl2s), A["l2_sets"]),
                        "l1": b.add(b.mul(b.urem(b.ashr(l1sec(s), spl1s), f.max(A["l1_sets"], 1)), P),
                                    f.mod(f.ld(f.ptr("sm", I32), j), P))}
                for level, set_ in sets.items():
                    with f.if_(f.cmp(">", A[f"{level}_sets"], 0)):      # (no L1: its arguments are 0)
                        row_of = f.ptr(f"{level}_row_of", I32)
                        if not rows:
                            prefetch(row_of, set_)
                            continue
                        r = f.ld(row_of, set_)
                        with f.if_(f.cmp(">", r, 0)):
                            base = b.mul(b.sub(r, c(1)), A[f"{level}_assoc"])
                            for plane in ("tags", "valid", "last"):
                                prefetch(f.ptr(f"{level}_{plane}"), base)

    with f.loop(0, A["n"]) as i:
        ahead(b.add(i, c(PREFETCH_ROW_OF)), False)
        ahead(b.add(i, c(PREFETCH_ROWS)), True)
        q = emit_request(f, i)
        with f.if_(emit_selected(f, q)):
            row = q["row"]
            kind = f.ld(f.ptr("kind", I8), row)
            load = f.cmp("==", q["op"], 0)
            s0, s1 = f.ld(start, i), f.ld(start, b.add(i, c(1)))
            l1hit, l1miss, l2read, l2hit = f.var(0), f.var(0), f.var(0), f.var(0)
            line2, bits2 = f.var(-1), f.var(0)       # the L2 access being gathered

            def flush_l2():
                with f.if_(f.cmp("!=", f.get(bits2), 0)):
                    ln = f.get(line2)
                    hb = access("l2", ln, f.get(bits2), b.urem(ln, A["l2_sets"]))
                    with f.if_(load):
                        f.inc(l2read, f.popcount(f.get(bits2)))
                        f.inc(l2hit, f.popcount(hb))
                f.set(bits2, 0)

            def send(s):
                """Sector s goes to L2 (requests' sectors come ascending)."""
                ln = b.ashr(s, spl2s)
                with f.if_(f.cmp("!=", ln, f.get(line2))):
                    flush_l2()
                    f.set(line2, ln)
                f.set(bits2, b.or_(f.get(bits2), b.shl(c(1), low(s, spl2s))))

            via_l1 = b.or_(f.cmp("==", kind, 0), f.cmp("==", kind, 3))
            with f.if_else(via_l1) as (through_l1, straight):
                with through_l1:
                    part = f.mod(f.ld(f.ptr("sm", I32), i), P)
                    p = f.var(s0)
                    with f.while_(lambda: f.cmp("<", f.get(p), s1)):
                        # one L1 access: the request's sectors in one L1 line
                        g0 = f.get(p)
                        line1 = b.ashr(l1sec(f.ld(sec, g0)), spl1s)
                        bits1 = f.var(0)
                        q = f.var(g0)
                        with f.while_(lambda: b.and_(f.cmp("<", f.get(q), s1),
                                                     f.cmp("==", b.ashr(l1sec(f.ld(sec, f.get(q))), spl1s), line1))):
                            f.set(bits1, b.or_(f.get(bits1), b.shl(c(1), low(l1sec(f.ld(sec, f.get(q))), spl1s))))
                            f.inc(q)
                        g1 = f.get(q)
                        key = b.add(b.mul(line1, P), part)
                        set1 = b.add(b.mul(b.urem(line1, A["l1_sets"]), P), part)
                        hb = access("l1", key, f.get(bits1), set1)
                        with f.if_(load):
                            prev = f.var(-1)              # the last L1 sector sent to L2
                            with f.loop(g0, g1) as r:
                                e = l1sec(f.ld(sec, r))
                                hit = b.trunc(b.lshr(hb, low(e, spl1s)), ll.IntType(1))
                                with f.if_else(hit) as (yes, no):
                                    with yes:
                                        f.inc(l1hit)
                                    with no:
                                        f.inc(l1miss)
                                        with f.if_(f.cmp("!=", e, f.get(prev))):   # its whole L1 sector
                                            f.set(prev, e)
                                            with f.loop(0, k1) as x:
                                                send(b.add(b.shl(e, k1s), x))
                        f.set(p, g1)
                with straight:
                    with f.loop(s0, s1) as r:
                        send(f.ld(sec, r))
            flush_l2()
            nsec = b.sub(s1, s0)
            written = b.select(f.cmp("==", kind, 2), nsec, c(0))
            in_l1 = b.select(f.cmp("==", kind, 3), nsec, c(0))
            h1, h2, rd = f.get(l1hit), f.get(l2hit), f.get(l2read)
            dram = b.sub(rd, h2)
            cyc = b.add(b.add(b.mul(h1, A["cl1"]), b.mul(h2, A["cl2"])),
                        b.add(b.mul(dram, A["cdram"]), b.add(b.mul(written, A["cl2"]), b.mul(in_l1, A["cl1"]))))
            lat_load = b.select(f.cmp(">", dram, 0), A["latdram"],
                                b.select(f.cmp(">", h2, 0), A["lat2"], A["lat1"]))
            lat_other = b.select(f.cmp(">", in_l1, 0), A["lat1"], A["lat2"])
            f.add_to(f.ptr("cycles"), i, cyc)
            f.add_to(f.ptr("latency"), i, b.select(load, lat_load, lat_other))
            rb = b.mul(row, c(NC))
            for col, v in (("l1_hits", h1), ("l1_misses", f.get(l1miss)), ("l2_read", rd), ("l2_hits", h2),
                           ("dram", dram)):
                f.add_to(table, b.add(rb, c(COL[col])), v)
    f.finish()
    return str(m)


def applies(mem, l2) -> bool:
    """Whether this walk serves `mem`'s caches: sector and line counts that
    are powers of two (every preset's)."""
    pow2 = lambda v: v > 0 and v & (v - 1) == 0  # noqa: E731
    return (l2 is not None and pow2(l2.sectors_per_line) and pow2(max(1, mem.l1_sector_bytes // 32))
            and pow2(max(1, mem.l1_line_bytes // mem.l1_sector_bytes)))


def _cache_args(cache, m: int) -> list:
    """The state of a SectoredCache as CACHE_ARGS (sets: per partition), with
    room for m more rows."""
    st = cache.lru_state()
    st.reserve(m)
    tags, valid, last = st._ptrs if st._ptrs is not None else (0, 0, 0)
    row_of, meta = st._fixed
    return [row_of, tags, valid, last, st.assoc, meta, cache.num_sets]


def cache_walk(arrays: tuple, spaces: tuple, start: np.ndarray, sec: np.ndarray, kind: np.ndarray,
               mem, num_sms: int, l1, l2, cycles: np.ndarray, latency: np.ndarray,
               table: np.ndarray, prefetch_log: np.ndarray | None = None) -> int:
    """Look up a batch's global and local requests (request_table.batch_arrays;
    spaces: the global and local space codes; their sectors and starts from
    native_coalescer.coalesce_pass) in the SMs' L1 (`l1`, a SectoredCache
    with one partition per SM, or None) and in `l2`, in order; adds their
    cycles and latency, and their cache counts into `table`.
    kind int8[table rows] (module docstring). prefetch_log: int64[], room for
    every prefetch (at most 8 a request): the walk then logs the host address
    of each prefetch there, in order, and returns their count (else 0)."""
    for a, dt in ((start, np.int64), (sec, np.int64), (kind, np.int8), (cycles, np.int64),
                  (latency, np.int64), (table, np.int64)):
        if a.dtype != dt or not a.flags.c_contiguous:
            raise ValueError("cache_walk: arrays must be C-contiguous of the documented types")
    clock = np.array([l1._t if l1 is not None else 0, l2._t], dtype=np.int64)
    before = [(cc.lru_state().meta[1], cc.lru_state().meta[2]) if cc is not None else (0, 0) for cc in (l1, l2)]
    m = sec.size
    l1_args = _cache_args(l1, m) if l1 is not None else [0] * len(CACHE_ARGS)
    k1 = mem.l1_sector_bytes // 32 if l1 is not None else 1
    spl1 = mem.l1_line_bytes // mem.l1_sector_bytes if l1 is not None else 1
    args = [   # one array of arguments: packed_call.py
        *batch_addresses(arrays), *spaces, address(start), address(sec), address(kind),
        num_sms, k1.bit_length() - 1, spl1.bit_length() - 1, l2.sectors_per_line.bit_length() - 1,
        mem.cycles_per_l1_sector, mem.cycles_per_l2_sector, mem.cycles_per_dram_sector,
        mem.l1_hit_latency, mem.l2_hit_latency, mem.dram_latency,
        address(cycles), address(latency), address(table), address(clock),
        *l1_args, *_cache_args(l2, m)]
    logged = 0
    if prefetch_log is None:
        packed_call.native(SYMBOL, _build_ir, len(ARGS))(args)
    else:
        if prefetch_log.dtype != np.int64 or prefetch_log.size < 8 * len(arrays[0]):
            raise ValueError("cache_walk: prefetch_log must be int64 with room for 8 entries a request")
        count = np.zeros(1, dtype=np.int64)
        packed_call.native(LOGGED_SYMBOL, lambda: _build_ir(log=True), len(ARGS) + len(LOG_ARGS))(
            args + [address(prefetch_log), address(count)])
        logged = int(count[0])
    for cc, t, (h0, a0) in zip((l1, l2), clock.tolist(), before):
        if cc is not None:
            st = cc.lru_state()
            nh = int(st.meta[1]) - int(h0)
            cc.hits += nh
            cc.misses += int(st.meta[2]) - int(a0) - nh
            cc._t = t
    return logged
