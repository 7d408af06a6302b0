"""The coalescer's 'sectors' rule (sm_5x and later) for a whole batch, in
native code: the order-free part of charging global and local requests.

Per request, as coalescer.global_requests_batch and interleave_local do it
in numpy (coalescer.global_request_reference is the readable rule;
tests/test_request_table.py checks the paths agree): the distinct 32-byte
sectors its active lanes' bytes fall in, ascending. A local request's
offsets are first laid out as the hardware interleaves them (word w of
lane l at warp_base + (w * 32 + l) * ib, an access wider than ib bytes split
into its words). Atomics and reductions add the same-address serialisation
to their cycles and latency. Each request is added into its request_table
row (requests, sectors, active lanes, the first request with the most
sectors); the sectors come back as one array with each request's start
(CSR), for native_cache_walk to look up in issue order.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import packed_call
from gpuemu.jit.engine import address

from .native_banks import emit_multiplicity
from .native_ir import I32, Fn, c
from .request_table import BATCH_ARGS, COL, NC, batch_addresses, emit_request

SYMBOL = "gpuemu_coalesce_pass"
WARP = 32
LOCAL_BASE = 1 << 44          # coalescer.interleave_local: where the local windows start
ARGS = BATCH_ARGS + ("glob", "local", "ib", "ib_log", "window", "cycles_per_atomic", "cycles", "latency", "table",
                     "sec", "start")


def emit_selected(f: Fn, q: dict):
    """Whether request q (request_table.emit_request) is a global or local
    request the caches see: global (not a texture header) or local."""
    b, A = f.b, f.arg
    return b.or_(b.and_(f.cmp("==", q["space"], A["glob"]), f.cmp("==", q["skip"], 0)),
                 f.cmp("==", q["space"], A["local"]))


def _build_ir() -> str:
    m = ll.Module(name="coalesce_pass")
    f = Fn(m, SYMBOL, ARGS)
    A, b = f.arg, f.b
    vals = f.array(WARP)
    addr, sec, table, start = f.ptr("addr"), f.ptr("sec"), f.ptr("table"), f.ptr("start")
    ib, ibs = A["ib"], A["ib_log"]                  # a power of two (applies())
    out = f.var(0)                                   # sectors written so far
    f.st(start, 0, 0)

    top = f.var(-1)                                  # the request's highest sector so far (-1: none)

    def insert(v, first):
        """Put sector v (>= 0) into the request's ascending distinct list sec[first:out]."""
        with f.if_(f.cmp("!=", v, f.get(top))):      # a lane in the sector just added: nothing to do
            end = f.get(out)
            with f.if_else(f.cmp(">", v, f.get(top))) as (tail, inside):
                with tail:
                    f.st(sec, end, v)
                    f.inc(out)
                    f.set(top, v)
                with inside:
                    q = f.var(b.sub(end, c(1)))      # the first place holding a value >= v
                    with f.while_(lambda: b.and_(f.cmp(">", f.get(q), first),
                                                 f.cmp(">=", f.ld(sec, b.sub(f.get(q), c(1))), v))):
                        f.inc(q, -1)
                    with f.if_(f.cmp("!=", f.ld(sec, f.get(q)), v)):
                        p = f.var(end)
                        with f.while_(lambda: f.cmp(">", f.get(p), f.get(q))):
                            f.st(sec, f.get(p), f.ld(sec, b.sub(f.get(p), c(1))))
                            f.inc(p, -1)
                        f.st(sec, f.get(q), v)
                        f.inc(out)

    with f.loop(0, A["n"]) as i:
        q = emit_request(f, i)
        first = f.get(out)
        with f.if_(emit_selected(f, q)):
            f.set(top, -1)
            mask, size = q["mask"], q["size"]
            is_local = f.cmp("==", q["space"], A["local"])
            wid = b.add(b.mul(f.ld(f.ptr("block", I32), i), c(64)), f.ld(f.ptr("warp", I32), i))
            words = b.select(is_local, f.max(b.ashr(size, ibs), 1), c(1))
            unit = b.select(is_local, f.min(size, ib), size)
            base = b.add(c(LOCAL_BASE), b.mul(wid, A["window"]))
            row = b.mul(i, A["addr_stride"])

            def lane_access(a):
                s0 = b.ashr(a, c(5))
                s1 = b.ashr(b.add(a, b.sub(unit, c(1))), c(5))
                insert(s0, first)
                with f.if_(f.cmp("!=", s1, s0)):
                    insert(s1, first)

            with f.if_else(is_local) as (local_words, global_lanes):
                with local_words:
                    with f.loop(0, words) as w:
                        with f.loop(0, WARP) as lane:
                            with f.if_(b.trunc(b.lshr(mask, lane), ll.IntType(1))):
                                off = b.add(f.ld(addr, b.add(row, lane)), b.mul(w, ib))
                                lane_access(b.add(base, b.add(
                                    b.shl(b.add(b.mul(b.ashr(off, ibs), c(WARP)), lane), ibs),
                                    b.and_(off, b.sub(ib, c(1))))))
                with global_lanes:
                    with f.loop(0, WARP) as lane:
                        with f.if_(b.trunc(b.lshr(mask, lane), ll.IntType(1))):
                            lane_access(f.ld(addr, b.add(row, lane)))
            nsec = b.sub(f.get(out), first)
            with f.if_(f.cmp(">=", q["op"], 2)):      # atomics: one address serialises
                mult = emit_multiplicity(f, addr, i, mask, vals, A["addr_stride"])
                extra = b.mul(f.max(b.sub(mult, c(1)), 0), A["cycles_per_atomic"])
                f.add_to(f.ptr("cycles"), i, extra)
                f.add_to(f.ptr("latency"), i, extra)
            rb = b.mul(q["row"], c(NC))
            at = lambda col: b.add(rb, c(COL[col]))  # noqa: E731
            f.add_to(table, at("requests"), 1)
            f.add_to(table, at("cost"), nsec)
            f.add_to(table, at("lanes"), f.popcount(mask))
            with f.if_(f.cmp(">", nsec, f.ld(table, at("best")))):
                f.st(table, at("best"), nsec)
                f.st(table, at("best_at"), i)
        f.st(start, b.add(i, c(1)), f.get(out))
    f.finish()
    return str(m)


def applies(mem) -> bool:
    """Whether this pass computes the sectors under `mem`'s rules."""
    ib = mem.local_interleave_bytes
    return mem.coalescing == "sectors" and ib > 0 and ib & (ib - 1) == 0


def coalesce_pass(arrays: tuple, spaces: tuple, mem, max_words: int, cycles: np.ndarray,
                  latency: np.ndarray, table: np.ndarray, requests: int | None = None) -> tuple:
    """The global and local requests of a batch (request_table.batch_arrays;
    spaces: the global and local space codes): adds them into `table`,
    atomics' serialisation into cycles and latency; returns (sectors
    int64[M], start int64[N + 1]): request i's sectors are
    sectors[start[i]:start[i + 1]], ascending (none for other requests).
    max_words: the most interleaved words of one local access; requests:
    how many global and local requests there are at most (default: all)."""
    n = arrays[0].size
    sec = np.empty((n if requests is None else requests) * 2 * WARP * max(1, max_words), dtype=np.int64)
    start = np.empty(n + 1, dtype=np.int64)
    for a in (cycles, latency, table):
        if a.dtype != np.int64 or not a.flags.c_contiguous:
            raise ValueError("coalesce_pass: cycles, latency and table must be C-contiguous int64")
    packed_call.native(SYMBOL, _build_ir, len(ARGS))((   # one array of arguments: packed_call.py
        *batch_addresses(arrays), *spaces, mem.local_interleave_bytes, mem.local_interleave_bytes.bit_length() - 1,
        mem.local_bytes_per_thread_window * WARP,
        mem.cycles_per_atomic_serialization, address(cycles), address(latency), address(table),
        address(sec), address(start)))
    return sec[:int(start[-1])], start
