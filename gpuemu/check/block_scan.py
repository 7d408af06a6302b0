"""racecheck and initcheck of shared and local memory in one native pass.

The rules are racecheck's and initcheck's (`find_races_reference` and
`uninitialized_reference` are the readable ones; tests/test_check_block_scan.py
checks this path against them on random traces). Instead of splitting every
trace record into rows and sorting them, one walk over the records of
complete blocks (emulation order, a block's records together) keeps a
shadow per address unit, as CUDA's racecheck does:

- initcheck: per unit the seq of the block's first write to it (shared: per
  block; local: per thread of the block). A read is uninitialised unless a
  write of an earlier record came before it.
- racecheck (shared): per unit and barrier interval, the accesses
  racecheck compares pairwise (of each warp-wide access its first
  PER_RECORD lanes, the first GROUP_CAP such), each new one compared with
  the kept ones before it: the same pairs as `find_races_reference`.

A block's barrier intervals must come in order (they do: a warp passes a
barrier only when the block's other warps reached one); `scan` answers
IRREGULAR otherwise, and UNIT_RANGE for a unit outside the shadow, and the
caller judges those records the numpy way. Findings come out aggregated: per
(hazard, line, other line) a count and the first pair found; per line of an
uninitialised read a count and the first such read.
"""
from __future__ import annotations

import ctypes
from contextlib import contextmanager
from dataclasses import dataclass

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import abi, engine

from .racecheck import GROUP_CAP, PER_RECORD

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
P8, P32, P64 = I8.as_pointer(), I32.as_pointer(), I64.as_pointer()
SYMBOLS = ("gpuemu_check_init_scan", "gpuemu_check_race_scan")
OK, IRREGULAR, UNIT_RANGE = 0, 1, 2
F_WRITE, F_READ, F_ATOMIC = 1, 2, 4          # instruction flags
RACE_FIELDS = 6      # count, block, thread in block of the finding's access, of the other, unit
INIT_FIELDS = 4      # count, block, thread in block, unit
INIT_STATE = 2       # per unit: stamp of the block that wrote it, seq of that first write
RACE_STATE = 5       # per unit: stamp of its interval, seq of the last access, accesses of that seq, kept, kept writes
KEPT = 3             # per kept access: seq, thread in block | wsync << 32, line index | flags << 32
_OFF = {f: abi.TRACE_DTYPE.fields[f][1] for f in ("instr", "mask", "space", "block", "warp", "addr", "epoch")}


# ------------------------------------------------------------------ the IR
def c(v, ty=I64):
    return ll.Constant(ty, v)


class _Fn:
    """An IRBuilder over one function, with entry-block variables and loops."""

    def __init__(self, m: ll.Module, symbol: str, args: list) -> None:
        self.fn = ll.Function(m, ll.FunctionType(I32, [t for _, t in args]), symbol)
        self.a = dict(zip((n for n, _ in args), self.fn.args))
        self.entry = self.fn.append_basic_block("entry")
        self.body = self.fn.append_basic_block("body")
        self.b = ll.IRBuilder(self.body)

    def var(self, init, ty=I64):
        with self.b.goto_block(self.entry):
            v = self.b.alloca(ty)
        self.b.store(init, v)
        return v

    def ld(self, p, i):
        return self.b.load(self.b.gep(p, [i]))

    def st(self, v, p, i):
        self.b.store(v, self.b.gep(p, [i]))

    @contextmanager
    def loop(self, start, stop):
        """for i in range(start, stop): yields i (i64)."""
        b = self.b
        i = self.var(start)
        cond, body, end = (self.fn.append_basic_block(n) for n in ("for", "do", "done"))
        b.branch(cond)
        b.position_at_end(cond)
        iv = b.load(i)
        b.cbranch(b.icmp_signed("<", iv, stop), body, end)
        b.position_at_end(body)
        yield iv
        if not b.block.is_terminated:
            b.store(b.add(iv, c(1)), i)
            b.branch(cond)
        b.position_at_end(end)

    @contextmanager
    def lanes(self, mask):
        """for each set bit of mask (i64), lowest first: yields the lane (i64)."""
        b = self.b
        m = self.var(mask)
        cond, body, end = (self.fn.append_basic_block(n) for n in ("lanes", "lane", "lanes_done"))
        b.branch(cond)
        b.position_at_end(cond)
        mv = b.load(m)
        b.cbranch(b.icmp_signed("!=", mv, c(0)), body, end)
        b.position_at_end(body)
        b.store(b.and_(mv, b.sub(mv, c(1))), m)
        yield b.cttz(mv, ll.Constant(I1, 1))
        if not b.block.is_terminated:
            b.branch(cond)
        b.position_at_end(end)

    def finish(self) -> None:
        self.b.position_at_end(self.entry)
        self.b.branch(self.body)


def _field(b, rp, name, ty, extra=None):
    off = c(_OFF[name]) if extra is None else b.add(c(_OFF[name]), extra)
    return b.load(b.inttoptr(b.add(rp, off), ty.as_pointer()))


def _walk(f: _Fn, per_record, per_unit) -> None:
    """The records of `space` in order; per_record(rec) -> ctx (or None to
    skip the record's lanes) is called first; then per_unit(ctx, lane, unit)
    for each active lane and each address unit it covers."""
    b, a = f.b, f.a
    use_shift = b.icmp_signed(">=", a["shift"], c(0))
    with f.loop(c(0), a["n"]) as r:
        rp = f.ld(a["recptr"], r)
        with b.if_then(b.icmp_signed("==", b.sext(_field(b, rp, "space", I32), I64), a["space"])):
            instr = b.sext(_field(b, rp, "instr", I32), I64)
            rec = dict(r=r, rp=rp, instr=instr, s=f.ld(a["seq"], r),
                       blk=b.sext(_field(b, rp, "block", I32), I64),
                       warp=b.sext(_field(b, rp, "warp", I32), I64),
                       epoch=_field(b, rp, "epoch", I64),
                       li=b.sext(f.ld(a["t_line"], instr), I64), fl=f.ld(a["t_flags"], instr))
            for name, bit in (("W", F_WRITE), ("R", F_READ), ("A", F_ATOMIC)):
                rec[name] = b.icmp_signed("!=", b.and_(rec["fl"], c(bit, I32)), c(0, I32))
            go = per_record(rec)
            with b.if_then(go):
                nu = b.sext(f.ld(a["t_units"], instr), I64)
                mask = b.zext(_field(b, rp, "mask", I32), I64)
                with f.lanes(mask) as lane:
                    addr = _field(b, rp, "addr", I64, b.mul(lane, c(8)))
                    u0v = f.var(c(0))
                    with b.if_else(use_shift) as (pow2, other):    # a division only where needed
                        with pow2:
                            b.store(b.lshr(addr, a["shift"]), u0v)
                        with other:
                            b.store(b.udiv(addr, a["gran"]), u0v)
                    u0 = b.load(u0v)
                    tib = b.add(b.mul(rec["warp"], c(abi.WARP)), lane)
                    with b.if_else(b.icmp_signed("==", nu, c(1))) as (one, several):
                        with one:                   # the common case: no loop over units
                            per_unit(rec, tib, u0)
                        with several:
                            with f.loop(c(0), nu) as k:
                                per_unit(rec, tib, b.add(u0, k))


def _count(b, out, idx, fields) -> None:
    """out[idx] += 1; the first time, out[idx+1:] = fields."""
    p = b.gep(out, [idx])
    cnt = b.load(p)
    with b.if_then(b.icmp_signed("==", cnt, c(0))):
        for i, v in enumerate(fields, 1):
            b.store(v, b.gep(out, [b.add(idx, c(i))]))
    b.store(b.add(cnt, c(1)), p)


COMMON = [("n", I64), ("recptr", P64), ("seq", P64), ("space", I64), ("t_line", P32),
          ("t_flags", P32), ("t_units", P32), ("shift", I64), ("gran", I64), ("nslots", I64),
          ("stamps", P64)]


def _build_init(m: ll.Module) -> None:
    """initcheck: per unit (shared: of the block; local: of each thread,
    units_per_thread > 0) the stamp of the block and seq of its first write."""
    f = _Fn(m, SYMBOLS[0], COMMON + [("upt", I64), ("state", P64), ("out", P64)])
    b, a = f.b, f.a
    stamp = f.var(f.ld(a["stamps"], c(0)))
    prev_block = f.var(c(-1 << 40))
    local = b.icmp_signed(">", a["upt"], c(0))
    limit = b.select(local, a["upt"], a["nslots"])

    def per_record(rec):
        with b.if_then(b.icmp_signed("!=", rec["blk"], b.load(prev_block))):
            b.store(b.add(b.load(stamp), c(1)), stamp)
            b.store(rec["blk"], prev_block)
        rec["stamp"] = b.load(stamp)
        return ll.Constant(I1, 1)

    def per_unit(rec, tib, u):
        with b.if_then(b.icmp_unsigned(">=", u, limit)):
            b.ret(c(UNIT_RANGE, I32))
        slot = b.add(b.select(local, b.mul(tib, a["upt"]), c(0)), u)
        sp = b.gep(a["state"], [b.mul(slot, c(INIT_STATE))])
        qp = b.gep(sp, [c(1)])
        seen = b.icmp_signed("==", b.load(sp), rec["stamp"])
        with b.if_then(rec["R"]):
            written = b.and_(seen, b.icmp_signed("<", b.load(qp), rec["s"]))
            with b.if_then(b.not_(written)):
                _count(b, a["out"], b.mul(rec["li"], c(INIT_FIELDS)), (rec["blk"], tib, u))
        with b.if_then(b.and_(rec["W"], b.not_(seen))):
            b.store(rec["stamp"], sp)
            b.store(rec["s"], qp)

    _walk(f, per_record, per_unit)
    f.st(b.load(stamp), a["stamps"], c(0))
    b.ret(c(OK, I32))
    f.finish()


def _build_race(m: ll.Module) -> None:
    """racecheck of one block at a time: per unit and barrier interval the
    kept accesses (racecheck's PER_RECORD and GROUP_CAP), each new one
    compared with them."""
    f = _Fn(m, SYMBOLS[1], COMMON + [("has_write", P8), ("its", I64), ("nlines", I64),
                                     ("state", P64), ("kept", P64), ("out", P64)])
    b, a = f.b, f.a
    stamp = f.var(f.ld(a["stamps"], c(1)))
    prev_block = f.var(c(-1 << 40))
    prev_ep = f.var(c(0))
    its = b.icmp_signed("!=", a["its"], c(0))
    L = a["nlines"]

    def per_record(rec):
        # a new block or barrier interval: a fresh stamp (a unit's kept accesses are forgotten)
        ep = b.and_(rec["epoch"], c(0xFFFFFFFF))
        new_block = b.icmp_signed("!=", rec["blk"], b.load(prev_block))
        pe = b.load(prev_ep)
        with b.if_then(b.and_(b.not_(new_block), b.icmp_signed("<", ep, pe))):
            b.ret(c(IRREGULAR, I32))
        with b.if_then(b.or_(new_block, b.icmp_signed("!=", ep, pe))):
            b.store(b.add(b.load(stamp), c(1)), stamp)
            b.store(rec["blk"], prev_block)
            b.store(ep, prev_ep)
        rec["stamp"] = b.load(stamp)
        rec["ws"] = b.lshr(rec["epoch"], c(32))
        # an interval with no write to this space has no race: skip its accesses
        return b.icmp_signed("!=", f.ld(a["has_write"], rec["r"]), c(0, I8))

    def per_unit(rec, tib, u):
        with b.if_then(b.icmp_unsigned(">=", u, a["nslots"])):
            b.ret(c(UNIT_RANGE, I32))
        sp = b.gep(a["state"], [b.mul(u, c(RACE_STATE))])
        lseq_p, cseq_p, nk_p, nw_p = (b.gep(sp, [c(i)]) for i in range(1, RACE_STATE))
        s = rec["s"]
        with b.if_then(b.icmp_signed("!=", b.load(sp), rec["stamp"])):   # first access of the interval
            b.store(rec["stamp"], sp)
            b.store(c(-1), lseq_p)
            b.store(c(0), cseq_p)
            b.store(c(0), nk_p)
            b.store(c(0), nw_p)
        same = b.icmp_signed("==", b.load(lseq_p), s)
        cs = b.select(same, b.add(b.load(cseq_p), c(1)), c(1))
        b.store(cs, cseq_p)
        b.store(s, lseq_p)
        nkv = b.load(nk_p)
        keep = b.and_(b.icmp_signed("<=", cs, c(PER_RECORD)), b.icmp_signed("<", nkv, c(GROUP_CAP)))
        W, A = rec["W"], rec["A"]
        with b.if_then(keep):
            kbase = b.gep(a["kept"], [b.mul(u, c(GROUP_CAP * KEPT))])
            with b.if_then(b.or_(W, b.icmp_signed(">", b.load(nw_p), c(0)))):
                with f.loop(c(0), nkv) as j:
                    e = b.gep(kbase, [b.mul(j, c(KEPT))])
                    t2 = b.load(b.gep(e, [c(1)]))
                    l2 = b.load(b.gep(e, [c(2)]))
                    et = b.and_(t2, c(0xFFFFFFFF))
                    efl = b.lshr(l2, c(32))
                    eW = b.icmp_signed("!=", b.and_(efl, c(F_WRITE)), c(0))
                    eA = b.icmp_signed("!=", b.and_(efl, c(F_ATOMIC)), c(0))
                    ok = b.and_(b.icmp_signed("!=", et, tib), b.or_(eW, W))
                    ok = b.and_(ok, b.not_(b.and_(eA, A)))
                    same_warp = b.icmp_signed("==", b.lshr(et, c(5)), rec["warp"])
                    unsynced = b.and_(its, b.and_(b.icmp_signed("!=", b.load(e), s),
                                                  b.icmp_signed("==", b.lshr(t2, c(32)), rec["ws"])))
                    ok = b.and_(ok, b.or_(b.not_(same_warp), unsynced))
                    with b.if_then(ok):
                        lx, li = b.and_(l2, c(0xFFFFFFFF)), rec["li"]
                        both = b.and_(eW, W)
                        kind = b.select(both, c(0), b.select(eW, c(1), c(2)))
                        hi = b.select(b.icmp_signed(">", lx, li), lx, li)
                        lo = b.select(b.icmp_signed(">", lx, li), li, lx)
                        line = b.select(both, hi, b.select(eW, lx, li))
                        other = b.select(both, lo, b.select(eW, li, lx))
                        first_x = b.or_(b.and_(eW, b.not_(W)), b.and_(both, b.icmp_signed("==", lx, line)))
                        idx = b.mul(b.add(b.mul(b.add(b.mul(kind, L), line), L), other), c(RACE_FIELDS))
                        _count(b, a["out"], idx, (rec["blk"], b.select(first_x, et, tib), rec["blk"],
                                                  b.select(first_x, tib, et), u))
            e = b.gep(kbase, [b.mul(nkv, c(KEPT))])
            b.store(s, e)
            b.store(b.or_(tib, b.shl(rec["ws"], c(32))), b.gep(e, [c(1)]))
            b.store(b.or_(rec["li"], b.shl(b.zext(rec["fl"], I64), c(32))), b.gep(e, [c(2)]))
            b.store(b.add(nkv, c(1)), nk_p)
            b.store(b.add(b.load(nw_p), b.zext(W, I64)), nw_p)

    _walk(f, per_record, per_unit)
    f.st(b.load(stamp), a["stamps"], c(1))
    b.ret(c(OK, I32))
    f.finish()


def _module(build) -> str:
    m = ll.Module(name=build.__name__)
    build(m)
    return str(m)


_P, _N = ctypes.c_void_p, ctypes.c_int64
_COMMON = [_N, _P, _P, _N, _P, _P, _P, _N, _N, _N, _P]
INIT_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, *_COMMON, _N, _P, _P)
RACE_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, *_COMMON, _P, _N, _N, _P, _P, _P)


# ------------------------------------------------------------ Python side
@dataclass
class Tables:
    """Per MemInstr id: compact line index, flags (F_*), units per access."""
    line: np.ndarray          # int32
    flags: np.ndarray         # int32
    units: np.ndarray         # int32
    lines: np.ndarray         # compact index -> source line


def tables(instr_line, write, read, atomic, size, unit: int) -> Tables:
    """Tables of one space from InstrTables' columns (unit: the space's granule)."""
    lines, idx = np.unique(np.asarray(instr_line), return_inverse=True)
    flags = (write.astype(np.int32) * F_WRITE | read.astype(np.int32) * F_READ
             | atomic.astype(np.int32) * F_ATOMIC)
    return Tables(idx.astype(np.int32), flags.astype(np.int32),
                  np.maximum(size // unit, 1).astype(np.int32), lines)


class Shadow:
    """What `scan` keeps per address unit (shared: of a block; local: of
    each thread of a block, units_per_thread each), and its stamps."""

    def __init__(self, nslots: int, race: bool, units_per_thread: int = 0) -> None:
        self.nslots, self.upt = nslots, units_per_thread
        self.stamps = np.zeros(2, np.int64)
        self.init = np.empty((nslots, INIT_STATE), np.int64)
        self.race = np.empty((nslots if race else 0, RACE_STATE), np.int64)
        # np.empty: pages of units never accessed are never touched
        self.kept = np.empty((nslots if race else 0, GROUP_CAP, KEPT), np.int64)
        self.reset()

    def reset(self) -> None:
        """Forget everything (after a scan that stopped half-way)."""
        self.init[:, 0] = -1
        self.race[:, 0] = -1
        self.stamps[:] = 0


def interval_writes(rec: np.ndarray, space: int, tab: Tables) -> np.ndarray:
    """Per record of `rec` (abi.TRACE_DTYPE, scan's records): does its
    block's barrier interval (a run of records of one block and epoch) hold
    a write to `space`? An interval without one has no race: scan skips
    its pairs. uint8."""
    mine = rec["space"] == space
    key = (rec["block"].astype(np.int64) << 32) | (rec["epoch"] & 0xFFFFFFFF)
    k = key[mine]
    out = np.zeros(len(rec), np.uint8)
    if not len(k):
        return out
    start = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    w = (tab.flags[rec["instr"][mine]] & F_WRITE).astype(np.uint8)
    run_w = np.maximum.reduceat(w, start)
    out[mine] = np.repeat(run_w, np.diff(np.append(start, len(k))))
    return out


def scan(recptr: np.ndarray, seq: np.ndarray, has_write, space: int, tab: Tables, unit: int,
         shadow: Shadow, its: bool, race: bool, init: bool) -> tuple:
    """(status, race table, init table) of the records at addresses `recptr`
    (abi.TRACE_DTYPE, complete blocks in emulation order) of one `space`,
    launch-wide indices `seq`; has_write: interval_writes of the same
    records (read for `race` only). race table[kind, line, other] = (count,
    block, thread in block, other block, other thread, unit), kind an index
    of racecheck.KINDS, lines compact indices (tab.lines); init
    table[line] = (count, block, thread in block, unit)."""
    L = len(tab.lines)
    race_out = np.zeros((3, L, L, RACE_FIELDS), np.int64)
    init_out = np.zeros((L, INIT_FIELDS), np.int64)
    n = len(recptr)
    if not n:
        return OK, race_out, init_out
    recptr = np.ascontiguousarray(recptr, np.int64)
    seq = np.ascontiguousarray(seq, np.int64)
    shift = unit.bit_length() - 1 if unit & (unit - 1) == 0 else -1
    sh = shadow
    common = (n, recptr.ctypes.data, seq.ctypes.data, space, tab.line.ctypes.data,
              tab.flags.ctypes.data, tab.units.ctypes.data, shift, unit, sh.nslots, sh.stamps.ctypes.data)
    status = OK
    if init:
        fn = engine.native_function(SYMBOLS[0], lambda: _module(_build_init), INIT_PROTOTYPE)
        status = fn(*common, sh.upt, sh.init.ctypes.data, init_out.ctypes.data)
    if race and status == OK:
        has_write = np.ascontiguousarray(has_write, np.uint8)
        fn = engine.native_function(SYMBOLS[1], lambda: _module(_build_race), RACE_PROTOTYPE)
        status = fn(*common, has_write.ctypes.data, int(its), L, sh.race.ctypes.data,
                    sh.kept.ctypes.data, race_out.ctypes.data)
    if status != OK:
        shadow.reset()
        return status, None, None
    return OK, race_out, init_out
