"""The recorder's hand-off as native code: stop points packed as the engine
reads them, and sorted by warp with a counting sort.

Two passes replace the numpy work of warp_trace.TraceRecorder (per batch:
fields of the 296-byte trace records, table look-ups, int32 checks; at the
end: an argsort of every stop point by (warp, position) and a scatter of the
records into that order):

- `pack` (per drained trace batch): each request as one 32-byte record
  (ITEM_COLUMNS: at, kind=MEM, pipe, cost, latency, use, line, warp), and
  counted for its warp. It refuses (returns False, writes no count) a batch
  whose numbers do not fit int32 or fall outside the tables: the recorder
  then keeps the batch as int64 columns (its numpy path).
- `place` (per packed batch, in arrival order) and `flush`: a counting sort.
  Every warp's slice of the output is known from the counts; a warp's
  requests arrive in stream order, so each goes to the next place of its
  warp, after the warp's barrier and exit points (sorted beforehand: few)
  that come before it. A request arriving out of its warp's order makes
  `place` refuse, and the recorder sorts with numpy instead.

The order is the numpy path's exactly (stable by (warp, 2 x at + is-request));
tests/test_native_trace.py checks the records equal that path's.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import abi, engine
from gpuemu.memory.trace import SPACE_CODES
from gpuemu.memory.native_ir import I32, Fn, c, prototype

PACK, PLACE, FLUSH = "gpuemu_trace_pack", "gpuemu_trace_place", "gpuemu_trace_flush"
PACK_ARGS = ("rec", "n", "stride", "cycles", "latency", "use", "line", "ntab", "nw", "nwarps",
             "cnt", "out")
PLACE_ARGS = ("src", "n", "cur", "lastkey", "ec", "evend", "evrec", "evkey", "out")
FLUSH_ARGS = ("nwarps", "cur", "ec", "evend", "evrec", "out")
# The columns of WarpPrograms.items, one int32 record of 32 bytes per stop point: the layout
# the native engine walks (native_engine.py), "warp" the warp g of the point.
ITEM_COLUMNS = ("at", "kind", "pipe", "cost", "latency", "use", "line", "warp")
W = len(ITEM_COLUMNS)                # int32 per record
INT32_MAX = (1 << 31) - 1
# What each int32 field of a record may hold (cost and latency are at least 1 by then): a
# request or event outside these keeps the recorder on its int64 columns (`fits`); `pack`
# checks the same bounds natively.
LIMITS = {"at": (0, INT32_MAX), "cost": (0, INT32_MAX), "latency": (0, INT32_MAX),
          "use": (-1, INT32_MAX), "line": (-INT32_MAX - 1, INT32_MAX)}
# byte offsets of the fields of abi.TRACE_DTYPE that the hand-off reads
INSTR, SPACE, BLOCK, WARP, ICOUNT = (abi.TRACE_DTYPE.fields[n][1]
                                     for n in ("instr", "space", "block", "warp", "icount"))
MEM, BARRIER, EXIT = 0, 1, 2         # stop-point kinds
PIPE_LSU, PIPE_SHARED = 0, 1         # global/local/constant requests, shared requests
SHARED_SPACE = SPACE_CODES["shared"]


def _copy_record(f: Fn, src, i, dst, j) -> None:
    """dst[j] = src[i], one 32-byte record as four int64."""
    for k in range(4):
        f.st(dst, f.b.add(f.b.mul(j, c(4)), c(k)), f.ld(src, f.b.add(f.b.mul(i, c(4)), c(k))))


def _build_ir() -> str:
    m = ll.Module(name="trace_handoff")

    # ---- pack: one batch of trace records -> int32 records, counted per warp
    f = Fn(m, PACK, PACK_ARGS)
    A, b = f.arg, f.b
    r32, r64 = f.ptr("rec", I32), f.ptr("rec")
    out = f.ptr("out", I32)
    cyc, lat, use_t, line_t = f.ptr("cycles"), f.ptr("latency"), f.ptr("use"), f.ptr("line")
    w32 = b.sdiv(A["stride"], c(4))
    w64 = b.sdiv(A["stride"], c(8))

    def field32(i, off):
        return f.ld(r32, b.add(b.mul(i, w32), c(off // 4)))

    def outside(v, lo, hi):
        return b.or_(f.cmp("<", v, lo), f.cmp(">", v, hi))

    with f.loop(0, A["n"]) as i:
        iid = field32(i, INSTR)
        with f.if_(outside(iid, 0, b.sub(A["ntab"], c(1)))):
            f.ret(1)
        at = f.ld(r64, b.add(b.mul(i, w64), c(ICOUNT // 8)))
        g = b.add(b.mul(field32(i, BLOCK), A["nw"]), field32(i, WARP))
        cost, la = f.max(f.ld(cyc, i), 1), f.max(f.ld(lat, i), 1)
        use, line = f.ld(use_t, iid), f.ld(line_t, iid)
        bad = outside(g, 0, b.sub(A["nwarps"], c(1)))
        for name, v in (("at", at), ("cost", cost), ("latency", la), ("use", use), ("line", line)):
            bad = b.or_(bad, outside(v, *LIMITS[name]))
        with f.if_(bad):
            f.ret(1)
        pipe = b.select(f.cmp("==", field32(i, SPACE), SHARED_SPACE), c(PIPE_SHARED), c(PIPE_LSU))
        base = b.mul(i, c(W))
        for k, v in enumerate((at, c(MEM), pipe, cost, la, use, line, g)):
            f.st(out, b.add(base, c(k)), v)
    with f.loop(0, A["n"]) as i:        # every record fits: count them
        f.add_to(f.ptr("cnt"), f.ld(out, b.add(b.mul(i, c(W)), c(W - 1))), 1)
    f.finish()

    # ---- place: a packed batch to its warps' places (after their earlier stop points)
    f = Fn(m, PLACE, PLACE_ARGS)
    A, b = f.arg, f.b
    src32, src, out = f.ptr("src", I32), f.ptr("src"), f.ptr("out")
    cur, lastkey, ec, evend = f.ptr("cur"), f.ptr("lastkey"), f.ptr("ec"), f.ptr("evend")
    evrec, evkey = f.ptr("evrec"), f.ptr("evkey")
    with f.loop(0, A["n"]) as i:
        g = f.ld(src32, b.add(b.mul(i, c(W)), c(W - 1)))
        key = b.add(b.mul(f.ld(src32, b.mul(i, c(W))), c(2)), c(1))
        with f.if_(f.cmp("<", key, f.ld(lastkey, g))):
            f.ret(1)                    # out of its warp's order: the numpy sort
        f.st(lastkey, g, key)
        e, ee = f.var(f.ld(ec, g)), f.ld(evend, g)
        pos = f.var(f.ld(cur, g))

        def before():
            ok = f.var(0)
            with f.if_(f.cmp("<", f.get(e), ee)):
                f.set(ok, b.zext(f.cmp("<", f.ld(evkey, f.get(e)), key), ll.IntType(64)))
            return f.cmp("!=", f.get(ok), 0)

        with f.while_(before):
            _copy_record(f, evrec, f.get(e), out, f.get(pos))
            f.inc(e)
            f.inc(pos)
        _copy_record(f, src, i, out, f.get(pos))
        f.st(ec, g, f.get(e))
        f.st(cur, g, b.add(f.get(pos), c(1)))
    f.finish()

    # ---- flush: every warp's stop points after its last request
    f = Fn(m, FLUSH, FLUSH_ARGS)
    A, b = f.arg, f.b
    cur, ec, evend = f.ptr("cur"), f.ptr("ec"), f.ptr("evend")
    with f.loop(0, A["nwarps"]) as g:
        pos = f.var(f.ld(cur, g))
        with f.loop(f.ld(ec, g), f.ld(evend, g)) as e:
            _copy_record(f, f.ptr("evrec"), e, f.ptr("out"), f.get(pos))
            f.inc(pos)
    f.finish()
    return str(m)


def fits(**columns) -> bool:
    """Whether every number of the named columns (LIMITS' names) fits its record field."""
    return all(not col.size or (LIMITS[name][0] <= int(col.min()) and int(col.max()) <= LIMITS[name][1])
               for name, col in columns.items())


def _fn(symbol: str, nargs: int):
    return engine.native_function(symbol, _build_ir, prototype(nargs))


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def pack(rec: np.ndarray, cycles, latency, use: np.ndarray, line: np.ndarray, nw: int,
         cnt: np.ndarray, out: np.ndarray = None):
    """The batch `rec` (abi.TRACE_DTYPE) as int32 records [n, 8] (ITEM_COLUMNS), written
    to `out` (C-contiguous int32 [n, 8]; a new array if None) and each counted in
    cnt[warp] (int64[warps]); None (no count written) when a number does not fit int32
    or lies outside the instruction tables `use` / `line` (int64)."""
    rec = np.ascontiguousarray(rec)
    n = len(rec)
    cyc, lat = _i64(cycles), _i64(latency)
    if cyc.size != n or lat.size != n or rec.dtype.itemsize % 8:
        return None
    if out is None:
        out = np.empty((n, W), np.int32)
    if out.shape != (n, W) or out.dtype != np.int32 or not out.flags.c_contiguous:
        raise ValueError("pack: out must be C-contiguous int32 [n, 8]")
    rc = _fn(PACK, len(PACK_ARGS))(rec.ctypes.data, n, rec.dtype.itemsize, cyc.ctypes.data,
                                   lat.ctypes.data, use.ctypes.data, line.ctypes.data, use.size,
                                   nw, cnt.size, cnt.ctypes.data, out.ctypes.data)
    return None if rc else out


def sort(batches: list, events: np.ndarray, starts: np.ndarray, out: np.ndarray) -> bool:
    """Write the packed request batches (in arrival order) and the packed barrier/exit
    records `events` (int32 [e, 8], sorted by (warp, at), stable) into `out` (int32
    [items, 8]), each warp's points from starts[warp] on, in stream order; False when a
    warp's requests arrived out of order (out is then partly written)."""
    nwarps = starts.size
    ev_warp = events[:, W - 1].astype(np.int64)
    ev_cnt = np.bincount(ev_warp, minlength=nwarps)[:nwarps]
    evend = _i64(np.cumsum(ev_cnt))
    ec = evend - ev_cnt
    evkey = _i64(events[:, 0].astype(np.int64) * 2)
    evrec = np.ascontiguousarray(events) if events.size else np.zeros((1, W), np.int32)
    evkey = evkey if evkey.size else np.zeros(1, np.int64)
    cur = _i64(starts).copy()
    lastkey = np.full(nwarps, -1, np.int64)
    place = _fn(PLACE, len(PLACE_ARGS))
    for batch in batches:
        if place(batch.ctypes.data, len(batch), cur.ctypes.data, lastkey.ctypes.data,
                 ec.ctypes.data, evend.ctypes.data, evrec.ctypes.data, evkey.ctypes.data,
                 out.ctypes.data):
            return False
    _fn(FLUSH, len(FLUSH_ARGS))(nwarps, cur.ctypes.data, ec.ctypes.data, evend.ctypes.data,
                                evrec.ctypes.data, out.ctypes.data)
    return True
