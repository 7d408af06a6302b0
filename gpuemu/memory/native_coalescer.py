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

from gpuemu.jit import engine

from .native_banks import HASH, emit_multiplicity
from .native_ir import I8, I32, Fn, c, prototype
from .request_table import COL, NC

SYMBOL = "gpuemu_coalesce_pass"
WARP = 32
LOCAL_BASE = 1 << 44          # coalescer.interleave_local: where the local windows start
ARGS = ("n", "sel", "addr", "mask", "size", "op", "row", "local", "ib", "window",
        "cycles_per_atomic", "cycles", "latency", "table", "sec", "start")


def _build_ir() -> str:
    m = ll.Module(name="coalesce_pass")
    f = Fn(m, SYMBOL, ARGS)
    A, b = f.arg, f.b
    keys, counts, stamp = f.array(HASH), f.array(HASH), f.array(HASH)
    with f.loop(0, HASH) as k:
        f.st(stamp, k, 0)
    addr, sec, table, start = f.ptr("addr"), f.ptr("sec"), f.ptr("table"), f.ptr("start")
    ib = A["ib"]
    out = f.var(0)                                   # sectors written so far
    f.st(start, 0, 0)

    def insert(v, first):
        """Put sector v into the request's ascending distinct list sec[first:out]."""
        end = f.get(out)
        last = f.ld(sec, f.max(b.sub(end, c(1)), 0))
        with f.if_else(b.or_(f.cmp("==", end, first), f.cmp(">", v, last))) as (tail, inside):
            with tail:
                f.st(sec, end, v)
                f.inc(out)
            with inside:
                q = f.var(b.sub(end, c(1)))          # the first place holding a value >= v
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

    with f.loop(0, A["n"]) as j:
        i = f.ld(f.ptr("sel"), j)
        mask = f.ldu(f.ptr("mask", I32), i)
        size = f.ld(f.ptr("size"), i)
        wid = f.ld(f.ptr("local"), i)                # -1: global, else block * 64 + warp
        is_local = f.cmp(">=", wid, 0)
        words = b.select(is_local, f.max(b.sdiv(size, ib), 1), c(1))
        unit = b.select(is_local, f.min(size, ib), size)
        base = b.add(c(LOCAL_BASE), b.mul(wid, A["window"]))
        first = f.get(out)
        with f.loop(0, words) as w:
            with f.loop(0, WARP) as lane:
                with f.if_(b.trunc(b.lshr(mask, lane), ll.IntType(1))):
                    a0 = f.ld(addr, b.add(b.mul(i, c(WARP)), lane))
                    off = b.add(a0, b.mul(w, ib))
                    la = b.add(base, b.add(b.mul(b.add(b.mul(b.sdiv(off, ib), c(WARP)), lane), ib),
                                           b.srem(off, ib)))
                    a = b.select(is_local, la, a0)
                    s0 = b.ashr(a, c(5))
                    s1 = b.ashr(b.add(a, b.sub(unit, c(1))), c(5))
                    insert(s0, first)
                    with f.if_(f.cmp("!=", s1, s0)):
                        insert(s1, first)
        nsec = b.sub(f.get(out), first)
        f.st(start, b.add(j, c(1)), f.get(out))
        with f.if_(f.cmp(">=", f.ld(f.ptr("op", I8), i), 2)):      # atomics: one address serialises
            mult = emit_multiplicity(f, addr, i, mask, keys, counts, stamp, b.add(j, c(1)))
            extra = b.mul(f.max(b.sub(mult, c(1)), 0), A["cycles_per_atomic"])
            f.add_to(f.ptr("cycles"), i, extra)
            f.add_to(f.ptr("latency"), i, extra)
        rb = b.mul(f.ld(f.ptr("row"), i), c(NC))
        at = lambda col: b.add(rb, c(COL[col]))  # noqa: E731
        f.add_to(table, at("requests"), 1)
        f.add_to(table, at("cost"), nsec)
        f.add_to(table, at("lanes"), f.popcount(mask))
        with f.if_(f.cmp(">", nsec, f.ld(table, at("best")))):
            f.st(table, at("best"), nsec)
            f.st(table, at("best_at"), i)
    f.finish()
    return str(m)


def applies(mem) -> bool:
    """Whether this pass computes the sectors under `mem`'s rules."""
    ib = mem.local_interleave_bytes
    return mem.coalescing == "sectors" and ib > 0 and ib & (ib - 1) == 0


def coalesce_pass(sel: np.ndarray, addr: np.ndarray, mask: np.ndarray, size: np.ndarray,
                  op: np.ndarray, row: np.ndarray, local: np.ndarray, mem, cycles: np.ndarray,
                  latency: np.ndarray, table: np.ndarray) -> tuple:
    """The global and local requests `sel` (batch indices, ascending) of a
    batch: adds them into `table`, atomics' serialisation into cycles and
    latency; returns (sectors int64[M], start int64[len(sel) + 1]): request
    sel[j]'s sectors are sectors[start[j]:start[j + 1]], ascending. local:
    int64[N], block * 64 + warp of a local request, -1 for a global one."""
    ib = mem.local_interleave_bytes
    words = np.where(local[sel] >= 0, np.maximum(size[sel] // ib, 1), 1)
    sec = np.empty(int(words.sum()) * 2 * WARP, dtype=np.int64)
    start = np.empty(sel.size + 1, dtype=np.int64)
    for a, dt in ((sel, np.int64), (addr, np.int64), (mask, np.uint32), (size, np.int64), (op, np.int8),
                  (row, np.int64), (local, np.int64), (cycles, np.int64), (latency, np.int64),
                  (table, np.int64)):
        if a.dtype != dt or not a.flags.c_contiguous:
            raise ValueError("coalesce_pass: arrays must be C-contiguous of the documented types")
    engine.native_function(SYMBOL, _build_ir, prototype(len(ARGS)))(
        sel.size, sel.ctypes.data, addr.ctypes.data, mask.ctypes.data, size.ctypes.data, op.ctypes.data,
        row.ctypes.data, local.ctypes.data, ib, mem.local_bytes_per_thread_window * WARP,
        mem.cycles_per_atomic_serialization, cycles.ctypes.data, latency.ctypes.data, table.ctypes.data,
        sec.ctypes.data, start.ctypes.data)
    return sec[:int(start[-1])], start
