"""The bank arbiter's common case in native code: whole-warp phases, accesses
no wider than a bank ('any' broadcast; every preset from cc2.x on, 1-, 2-
and 4-byte accesses).

The rule is bank_arbiter's (`shared_request_reference` is the readable one,
tests/test_bank_arbiter.py checks this path against it): the active lanes'
bank words are (bank, row) = ((addr // bank_bytes) % banks, addr // row_bytes);
lanes reading one word share it; wavefronts = the most distinct words any
one bank must deliver; ideal = ceil(distinct words / banks); ways =
ceil(wavefronts / ideal) (0 for an empty mask). Bank width, bank count
and row bytes are powers of two on every preset (shifts, not divisions);
shared offsets lie below 2^31 (a block's window), so the first pass works
on 32-bit words. One call serves a whole
batch, per request a pass over its active lanes that notes each bank's
first row; only a request where some bank holds a second row takes the
walk that keeps each bank's distinct rows.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import engine

from .native_ir import I32, I64, Fn, c, prototype
from .request_table import BATCH_ARGS, COL, NC, batch_addresses, emit_request

SYMBOL = "gpuemu_shared_any"
PASS_SYMBOL = "gpuemu_shared_pass"
MAX_BANKS = 32     # bank bits of a request in one 32-bit word (every preset: 16 or 32 banks)
WARP = 32


def _lane_word(f: Fn, addr, r, lane, bank_shift, banks, row_shift, stride):
    """(bank, row) of lane `lane` of request r (addr: a row of `stride` int64s a request)."""
    b = f.b
    a = f.ld(addr, b.add(b.mul(r, stride), lane))
    word = b.ashr(a, bank_shift)                       # sizes are powers of two (applies())
    return b.and_(word, b.sub(banks, c(1))), b.ashr(b.shl(word, bank_shift), row_shift)


def _emit_first_pass(f: Fn, addr, r, mask, bank_shift, banks, row_shift, stride):
    """(lowest row, highest row, bits of the banks used) of request r's
    active lanes, in 32-lane vector operations on 32-bit words: shared
    offsets lie below 2^31 (a block's shared window) and banks are at most
    32 (applies())."""
    b = f.b
    v32 = ll.VectorType(I32, WARP)

    def splat(x):
        x = b.trunc(x, I32) if x.type != I32 else x
        one = b.insert_element(ll.Constant(v32, ll.Undefined), x, ll.Constant(I32, 0))
        return b.shuffle_vector(one, ll.Constant(v32, ll.Undefined), ll.Constant(v32, [0] * WARP))

    row_p = b.bitcast(b.gep(addr, [b.mul(r, stride)]), ll.VectorType(I64, WARP).as_pointer())
    a = b.trunc(b.load(row_p, align=8), v32)
    on = b.bitcast(b.trunc(mask, I32), ll.VectorType(ll.IntType(1), WARP))
    bank = b.and_(b.lshr(a, splat(bank_shift)), splat(b.sub(banks, c(1))))
    row = b.lshr(a, splat(row_shift))
    lo = f.reduce("umin", b.select(on, row, ll.Constant(v32, [-1] * WARP)))
    hi = f.reduce("umax", b.select(on, row, ll.Constant(v32, [0] * WARP)))
    used = f.reduce("or", b.select(on, b.shl(ll.Constant(v32, [1] * WARP), bank), ll.Constant(v32, [0] * WARP)))
    return b.zext(lo, I64), b.zext(hi, I64), b.zext(used, I64)


def _emit_banks(f: Fn, addr, r, mask, bank_shift, banks, row_shift, rows, cnt, stride=c(WARP)):
    """(wavefronts, ideal, ways) of request r: addr int64[.., 32], mask its lanes;
    rows/cnt: scratch (each bank's distinct rows so far, and how many).
    First a pass without branches (_emit_first_pass): when every active
    lane's word lies in one row, or no two lanes use one bank, the distinct
    words are the distinct banks, one wavefront; else _emit_rows."""
    b = f.b
    on = lambda lane: b.trunc(b.lshr(mask, lane), ll.IntType(1))  # noqa: E731
    lo, hi, used = _emit_first_pass(f, addr, r, mask, bank_shift, banks, row_shift, stride)
    dist = f.var(f.popcount(used))
    wf = f.var(f.min(f.get(dist), 1))
    one_row = f.cmp("==", lo, hi)
    own_banks = f.cmp("==", f.get(dist), f.popcount(mask))    # no two lanes share a bank
    with f.if_(b.not_(b.or_(one_row, own_banks))):
        _emit_rows(f, addr, r, on, bank_shift, banks, row_shift, rows, cnt, stride, dist, wf)
    w = f.get(wf)
    bank_log = f.popcount(b.sub(banks, c(1)))         # banks: a power of two
    ideal = b.ashr(b.add(f.get(dist), b.sub(banks, c(1))), bank_log)
    ways = f.var(w)                                   # ceil(wavefronts / ideal); 0 with no lane
    with f.if_(f.cmp("!=", ideal, 1)):
        f.set(ways, b.select(f.cmp(">", ideal, 0), b.sdiv(b.add(w, b.sub(f.max(ideal, 1), c(1))),
                                                          f.max(ideal, 1)), c(0)))
    return w, ideal, f.get(ways)


def _emit_rows(f: Fn, addr, r, on, bank_shift, banks, row_shift, rows, cnt, stride, dist, wf):
    """Sets dist (distinct words) and wf (the most distinct rows one bank
    serves) of request r, whose words lie in several rows: a quick pass that
    finds whether any bank holds two rows, then, only if one does, the walk
    that keeps each bank's distinct rows."""
    b = f.b
    seen, conflict = f.var(0), f.var(0)
    f.set(dist, 0)
    with f.loop(0, WARP) as lane:
        with f.if_(on(lane)):
            bank, row = _lane_word(f, addr, r, lane, bank_shift, banks, row_shift, stride)
            bit = b.shl(c(1), bank)
            with f.if_else(f.cmp("==", b.and_(f.get(seen), bit), 0)) as (new, again):
                with new:
                    f.set(seen, b.or_(f.get(seen), bit))
                    f.st(rows, b.mul(bank, c(WARP)), row)
                    f.inc(dist)
                with again:
                    with f.if_(f.cmp("!=", f.ld(rows, b.mul(bank, c(WARP))), row)):
                        f.set(conflict, 1)
    f.set(wf, f.min(f.get(dist), 1))
    with f.if_(f.cmp("!=", f.get(conflict), 0)):
        f.set(dist, 0)
        f.set(wf, 0)
        with f.loop(0, banks) as k:
            f.st(cnt, k, 0)
        with f.loop(0, WARP) as lane:
            with f.if_(on(lane)):
                bank, row = _lane_word(f, addr, r, lane, bank_shift, banks, row_shift, stride)
                have = f.ld(cnt, bank)
                base = b.mul(bank, c(WARP))
                k, hit = f.var(0), f.var(0)
                with f.while_(lambda: b.and_(f.cmp("<", f.get(k), have), f.cmp("==", f.get(hit), 0))):
                    with f.if_(f.cmp("==", f.ld(rows, b.add(base, f.get(k))), row)):
                        f.set(hit, 1)
                    f.inc(k)
                with f.if_(f.cmp("==", f.get(hit), 0)):       # a new word in this bank
                    f.st(rows, b.add(base, have), row)
                    f.st(cnt, bank, b.add(have, c(1)))
                    f.inc(dist)
                    f.set(wf, f.max(f.get(wf), b.add(have, c(1))))


def emit_multiplicity(f: Fn, addr, r, mask, vals, stride=c(WARP)):
    """The most active lanes of request r sharing one address (0: none):
    per active lane, how many lanes hold its address, counted without
    branches (inactive lanes hold distinct negative stand-ins; addresses
    are not negative). vals: scratch of WARP int64s."""
    b = f.b
    row = b.mul(r, stride)
    with f.loop(0, WARP) as lane:
        on = b.trunc(b.lshr(mask, lane), ll.IntType(1))
        f.st(vals, lane, b.select(on, f.ld(addr, b.add(row, lane)), b.sub(c(-1), lane)))
    best = f.var(0)
    with f.loop(0, WARP) as i:
        v = f.ld(vals, i)
        n = f.var(0)
        with f.loop(0, WARP) as j:
            f.inc(n, b.zext(f.cmp("==", f.ld(vals, j), v), I64))
        on = b.trunc(b.lshr(mask, i), ll.IntType(1))
        f.set(best, f.max(f.get(best), b.select(on, f.get(n), c(0))))
    return f.get(best)


def _build_any() -> str:
    m = ll.Module(name="banks")
    f = Fn(m, SYMBOL, ("n", "addr", "mask", "bank_shift", "banks", "row_shift", "wf", "ideal", "ways"))
    A = f.arg
    rows, cnt = f.array(MAX_BANKS * WARP), f.array(MAX_BANKS)
    addr, mask = f.ptr("addr"), f.ptr("mask", I32)
    with f.loop(0, A["n"]) as r:
        wf, ideal, ways = _emit_banks(f, addr, r, f.ldu(mask, r), A["bank_shift"], A["banks"],
                                      A["row_shift"], rows, cnt)
        f.st(f.ptr("wf"), r, wf)
        f.st(f.ptr("ideal"), r, ideal)
        f.st(f.ptr("ways"), r, ways)
    f.finish()
    return str(m)


PASS_ARGS = BATCH_ARGS + ("shared", "bank_shift", "banks", "row_shift", "cycles_per_wavefront",
                          "cycles_per_atomic", "latency0", "cycles", "latency", "table")


def _build_pass() -> str:
    """The shared requests of a batch: per request its wavefronts (atomics:
    same-address serialisation), cycles and latency; per table row
    (request_table) the requests, wavefronts, conflicts, conflict degrees
    and the first costliest request."""
    m = ll.Module(name="shared_pass")
    f = Fn(m, PASS_SYMBOL, PASS_ARGS)
    A, b = f.arg, f.b
    rows, cnt = f.array(MAX_BANKS * WARP), f.array(MAX_BANKS)
    vals = f.array(WARP)
    addr, table = f.ptr("addr"), f.ptr("table")
    cpw = A["cycles_per_wavefront"]
    with f.loop(0, A["n"]) as i:
        q = emit_request(f, i)
        with f.if_(f.cmp("==", q["space"], A["shared"])):
            mask = q["mask"]
            wf, ideal, ways = _emit_banks(f, addr, i, mask, A["bank_shift"], A["banks"], A["row_shift"],
                                          rows, cnt, A["addr_stride"])
            cost = f.var(wf)
            with f.if_(f.cmp(">=", q["op"], 2)):                 # atomics: one address serialises
                mult = emit_multiplicity(f, addr, i, mask, vals, A["addr_stride"])
                f.set(cost, b.add(f.max(wf, mult),
                                  b.mul(f.max(b.sub(mult, c(1)), 0), b.sub(A["cycles_per_atomic"], c(1)))))
            cst = f.get(cost)
            f.st(f.ptr("cycles"), i, b.mul(cst, cpw))
            f.st(f.ptr("latency"), i, b.add(A["latency0"], b.mul(f.max(b.sub(cst, c(1)), 0), cpw)))
            base = b.mul(q["row"], c(NC))
            at = lambda col: b.add(base, c(COL[col]))  # noqa: E731
            f.add_to(table, at("requests"), 1)
            f.add_to(table, at("cost"), wf)
            f.add_to(table, at("conflicts"), b.sub(wf, ideal))
            f.add_to(table, b.add(at("ways_0"), ways), 1)
            with f.if_(f.cmp(">", wf, f.ld(table, at("best")))):
                f.st(table, at("best"), wf)
                f.st(table, at("best_at"), i)
    f.finish()
    return str(m)


def applies(mem, size: int) -> bool:
    """Whether this path computes `size`-byte requests under `mem`'s rules."""
    from .bank_arbiter import phase_lanes
    pow2 = all(v > 0 and v & (v - 1) == 0
               for v in (mem.shared_bank_bytes, mem.banks, mem.shared_row_bytes))
    return (pow2 and mem.shared_broadcast != "one_word" and size <= mem.shared_bank_bytes
            and phase_lanes(mem, size) == WARP and mem.banks <= MAX_BANKS)


def shared_any(addr: np.ndarray, mask: np.ndarray, mem) -> tuple:
    """(wavefronts, ideal, ways), int64[N] each, of N requests: addr int64[N,32], mask uint32[N]."""
    addr = np.ascontiguousarray(addr, dtype=np.int64).reshape(-1, WARP)
    mask = np.ascontiguousarray(mask, dtype=np.uint32)
    n = addr.shape[0]
    wf, ideal, ways = (np.zeros(n, dtype=np.int64) for _ in range(3))
    if n:
        engine.native_function(SYMBOL, _build_any, prototype(9))(
            n, addr.ctypes.data, mask.ctypes.data, mem.shared_bank_bytes.bit_length() - 1,
            mem.banks, mem.shared_row_bytes.bit_length() - 1, wf.ctypes.data, ideal.ctypes.data, ways.ctypes.data)
    return wf, ideal, ways


def shared_pass(arrays: tuple, shared: int, mem, cycles: np.ndarray, latency: np.ndarray,
                table: np.ndarray) -> None:
    """Charge the shared requests (space code `shared`) of a batch
    (request_table.batch_arrays), all of sizes that `applies`: sets their
    cycles and latency (as MemorySystem._charge_shared) and adds them into
    `table` (request_table). cycles, latency int64[N], table int64, C-contiguous."""
    for a in (cycles, latency, table):
        if a.dtype != np.int64 or not a.flags.c_contiguous:
            raise ValueError("shared_pass: cycles, latency and table must be C-contiguous int64")
    engine.native_function(PASS_SYMBOL, _build_pass, prototype(len(PASS_ARGS)))(
        *batch_addresses(arrays), shared, mem.shared_bank_bytes.bit_length() - 1, mem.banks,
        mem.shared_row_bytes.bit_length() - 1, mem.cycles_per_shared_wavefront,
        mem.cycles_per_atomic_serialization, mem.shared_latency, cycles.ctypes.data, latency.ctypes.data,
        table.ctypes.data)
