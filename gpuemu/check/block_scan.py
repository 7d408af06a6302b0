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
  the kept ones before it: the same pairs as `find_races_reference`. A
  later access that could race (a write, or a read of a unit written in the
  interval; atomics only where a kept access is not atomic) answers CAPPED:
  racecheck's numpy path judges those records (`find_races`).

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
from gpuemu.jit.ir_writer import IRWriter

from .racecheck import GROUP_CAP, PER_RECORD, SYNC_CALL

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
P8, P32, P64 = I8.as_pointer(), I32.as_pointer(), I64.as_pointer()
SYMBOLS = ("gpuemu_check_init_scan", "gpuemu_check_race_scan")
OK, IRREGULAR, UNIT_RANGE, CAPPED = 0, 1, 2, 3
F_WRITE, F_READ, F_ATOMIC = 1, 2, 4          # instruction flags
RACE_FIELDS = 6      # count, block, thread in block of the finding's access, of the other, unit
INIT_FIELDS = 4      # count, block, thread in block, unit
RACE_STATE = 6       # per unit: stamp of its interval, seq of the last access, accesses of that seq, kept,
                     # kept writes, kept non-atomic accesses
KEPT = 3             # per kept access: seq, thread in block | wsync << 32, line index | flags << 32
_OFF = {f: abi.TRACE_DTYPE.fields[f][1] for f in ("instr", "mask", "space", "block", "warp", "addr", "epoch")}


# ------------------------------------------------------------------ the IR
def c(v, ty=I64):
    return ll.Constant(ty, v)


class _Fn(IRWriter):
    """An IRBuilder over one function of typed arguments `args` (its locals
    and loops: IRWriter), with a loop over a mask's lanes."""

    def __init__(self, m: ll.Module, symbol: str, args: list) -> None:
        super().__init__(ll.Function(m, ll.FunctionType(I32, [t for _, t in args]), symbol))
        self.a = dict(zip((n for n, _ in args), self.fn.args))

    def ld(self, p, i):
        return self.b.load(self.b.gep(p, [i]))

    def st(self, v, p, i):
        self.b.store(v, self.b.gep(p, [i]))

    @contextmanager
    def while_(self, cond):
        """while cond(): ... (cond emits the test); yields the block after
        the loop (branch there to break)."""
        with self.while_blocks(cond) as (_head, end):
            yield end

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
        self.close_entry()


def _field(b, rp, name, ty, extra=None):
    off = c(_OFF[name]) if extra is None else b.add(c(_OFF[name]), extra)
    return b.load(b.inttoptr(b.add(rp, off), ty.as_pointer()))


def _walk(f: _Fn, per_record, per_unit, start=None, stop=None) -> None:
    """The records of `space` in order (those in [start, stop)): per_record(rec)
    -> i1 (False: skip the record's lanes) first; then per_unit(rec, thread
    in block, unit) for each active lane and each address unit it covers."""
    b, a = f.b, f.a
    use_shift = b.icmp_signed(">=", a["shift"], c(0))
    with f.loop(c(0) if start is None else start, a["n"] if stop is None else stop) as r:
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
    units_per_thread > 0) the seq of its first write. Seqs grow through the
    launch and a block's records come together, so a unit was written in
    this block exactly when that seq is not below the block's first one."""
    f = _Fn(m, SYMBOLS[0], COMMON + [("upt", I64), ("state", P64), ("out", P64)])
    b, a = f.b, f.a
    prev_block = f.var(c(-1 << 40))
    block_start = f.var(c(0))
    local = b.icmp_signed(">", a["upt"], c(0))
    limit = b.select(local, a["upt"], a["nslots"])

    def per_record(rec):
        with b.if_then(b.icmp_signed("!=", rec["blk"], b.load(prev_block))):
            b.store(rec["blk"], prev_block)
            b.store(rec["s"], block_start)
        rec["start"] = b.load(block_start)
        return ll.Constant(I1, 1)

    def per_unit(rec, tib, u):
        with b.if_then(b.icmp_unsigned(">=", u, limit)):
            b.ret(c(UNIT_RANGE, I32))
        slot = b.add(b.select(local, b.mul(tib, a["upt"]), c(0)), u)
        qp = b.gep(a["state"], [slot])
        first = b.load(qp)
        seen = b.icmp_signed(">=", first, rec["start"])
        with b.if_then(rec["R"]):
            written = b.and_(seen, b.icmp_signed("<", first, rec["s"]))
            with b.if_then(b.not_(written)):
                _count(b, a["out"], b.mul(rec["li"], c(INIT_FIELDS)), (rec["blk"], tib, u))
        with b.if_then(b.and_(rec["W"], b.not_(seen))):
            b.store(rec["s"], qp)

    _walk(f, per_record, per_unit)
    b.ret(c(OK, I32))
    f.finish()


def _build_race(m: ll.Module) -> None:
    """racecheck of one block at a time: per unit and barrier interval the
    kept accesses (racecheck's PER_RECORD and GROUP_CAP), each new one
    compared with them; CAPPED for a later one that could race. An
    interval (a run of the space's records of one block and epoch) without
    a write has no race and is skipped. Two accesses of one warp a
    warp-sync interval apart are ordered, unless the warp has a partial
    __syncwarp (`sync_tables`): then a call between them must order their
    lanes (racecheck.syncwarp_orders)."""
    f = _Fn(m, SYMBOLS[1], COMMON + [("its", I64), ("nlines", I64),
                                     ("state", P64), ("kept", P64), ("out", P64),
                                     ("sbase", P64), ("sblock0", I64), ("snwarps", I64),
                                     ("nsbase", I64), ("scalls", P64)])
    b, a = f.b, f.a
    stamp = f.var(f.ld(a["stamps"], c(1)))
    prev_block = f.var(c(-1 << 40))
    prev_ep = f.var(c(0))
    its = b.icmp_signed("!=", a["its"], c(0))
    L = a["nlines"]
    n = a["n"]
    r_v, e_v, hw_v = f.var(c(0)), f.var(c(0)), f.var(c(0, I1), I1)

    def rp_of(i):
        return f.ld(a["recptr"], i)

    def mine(rp):
        return b.icmp_signed("==", b.sext(_field(b, rp, "space", I32), I64), a["space"])

    def key(rp):
        return (b.sext(_field(b, rp, "block", I32), I64),
                b.and_(_field(b, rp, "epoch", I64), c(0xFFFFFFFF)))

    def per_record(rec):
        rec["stamp"] = b.load(stamp)
        rec["ws"] = b.lshr(rec["epoch"], c(32))
        # the warp's calls in scalls (their k-th at cb + k), or -1: the interval rule
        cbv = f.var(c(-1))
        idx = b.add(b.mul(b.sub(rec["blk"], a["sblock0"]), a["snwarps"]), rec["warp"])
        with b.if_then(b.and_(b.icmp_signed(">=", idx, c(0)), b.icmp_signed("<", idx, a["nsbase"]))):
            b.store(f.ld(a["sbase"], idx), cbv)
        rec["cb"] = b.load(cbv)
        return ll.Constant(I1, 1)

    def call_orders(cb, lo, hi, lx, ly):
        """Does a call k of the warp, lo < k <= hi, order lanes lx and ly?"""
        hit = f.var(ll.Constant(I1, 0), I1)
        with f.loop(b.add(lo, c(1)), b.add(hi, c(1))) as k:
            e = b.gep(a["scalls"], [b.mul(b.add(cb, k), c(SYNC_CALL))])
            act = b.load(e)
            onx = b.icmp_signed("!=", b.and_(b.lshr(act, lx), c(1)), c(0))
            ony = b.icmp_signed("!=", b.and_(b.lshr(act, ly), c(1)), c(0))
            nx = b.icmp_signed("!=", b.and_(b.lshr(b.load(b.gep(e, [b.add(lx, c(1))])), ly), c(1)), c(0))
            ny = b.icmp_signed("!=", b.and_(b.lshr(b.load(b.gep(e, [b.add(ly, c(1))])), lx), c(1)), c(0))
            orders = b.and_(b.or_(onx, ony), b.and_(b.or_(b.not_(onx), nx), b.or_(b.not_(ony), ny)))
            b.store(b.or_(b.load(hit), b.or_(b.icmp_signed("<", act, c(0)), orders)), hit)
        return b.load(hit)

    def per_unit(rec, tib, u):
        with b.if_then(b.icmp_unsigned(">=", u, a["nslots"])):
            b.ret(c(UNIT_RANGE, I32))
        sp = b.gep(a["state"], [b.mul(u, c(RACE_STATE))])
        lseq_p, cseq_p, nk_p, nw_p, nn_p = (b.gep(sp, [c(i)]) for i in range(1, RACE_STATE))
        s = rec["s"]
        with b.if_then(b.icmp_signed("!=", b.load(sp), rec["stamp"])):   # first access of the interval
            b.store(rec["stamp"], sp)
            b.store(c(-1), lseq_p)
            b.store(c(0), cseq_p)
            b.store(c(0), nk_p)
            b.store(c(0), nw_p)
            b.store(c(0), nn_p)
        same = b.icmp_signed("==", b.load(lseq_p), s)
        cs = b.select(same, b.add(b.load(cseq_p), c(1)), c(1))
        b.store(cs, cseq_p)
        b.store(s, lseq_p)
        nkv = b.load(nk_p)
        one_of_record = b.icmp_signed("<=", cs, c(PER_RECORD))
        keep = b.and_(one_of_record, b.icmp_signed("<", nkv, c(GROUP_CAP)))
        W, A = rec["W"], rec["A"]
        may_race = b.and_(b.or_(W, b.icmp_signed(">", b.load(nw_p), c(0))),
                          b.not_(b.and_(A, b.icmp_signed("==", b.load(nn_p), c(0)))))
        with b.if_then(b.and_(b.and_(one_of_record, b.not_(keep)), may_race)):
            b.ret(c(CAPPED, I32))
        with b.if_then(keep):
            kbase = b.gep(a["kept"], [b.mul(u, c(GROUP_CAP * KEPT))])
            def compare(sync: bool) -> None:
                """The new access against each kept one; sync: its warp has a
                partial __syncwarp (a loop of its own: the common one stays lean)."""
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
                    wsx = b.lshr(t2, c(32))
                    other_record = b.icmp_signed("!=", b.load(e), s)
                    unsynced = b.and_(its, b.and_(other_record, b.icmp_signed("==", wsx, rec["ws"])))
                    if sync:
                        apart = f.var(ll.Constant(I1, 0), I1)
                        partial = b.and_(b.and_(its, same_warp),
                                         b.and_(other_record, b.icmp_signed("!=", wsx, rec["ws"])))
                        with b.if_then(b.and_(ok, partial)):
                            first = b.icmp_signed("<", wsx, rec["ws"])
                            b.store(b.not_(call_orders(rec["cb"], b.select(first, wsx, rec["ws"]),
                                                       b.select(first, rec["ws"], wsx),
                                                       b.and_(et, c(31)), b.and_(tib, c(31)))), apart)
                        unsynced = b.or_(unsynced, b.load(apart))
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

            with b.if_then(b.or_(W, b.icmp_signed(">", b.load(nw_p), c(0)))):
                with b.if_else(b.icmp_signed(">=", rec["cb"], c(0))) as (partial_warp, plain_warp):
                    with partial_warp:
                        compare(True)
                    with plain_warp:
                        compare(False)
            e = b.gep(kbase, [b.mul(nkv, c(KEPT))])
            b.store(s, e)
            b.store(b.or_(tib, b.shl(rec["ws"], c(32))), b.gep(e, [c(1)]))
            b.store(b.or_(rec["li"], b.shl(b.zext(rec["fl"], I64), c(32))), b.gep(e, [c(2)]))
            b.store(b.add(nkv, c(1)), nk_p)
            b.store(b.add(b.load(nw_p), b.zext(W, I64)), nw_p)
            b.store(b.add(b.load(nn_p), b.zext(b.not_(A), I64)), nn_p)


    with f.while_(lambda: b.icmp_signed("<", b.load(r_v), n)) as done:
        # the interval's first record
        with f.while_(lambda: b.and_(b.icmp_signed("<", b.load(r_v), n),
                                     b.not_(mine(rp_of(b.load(r_v)))))):
            b.store(b.add(b.load(r_v), c(1)), r_v)
        with b.if_then(b.icmp_signed(">=", b.load(r_v), n)):
            b.branch(done)
        start = b.load(r_v)
        blk0, ep0 = key(rp_of(start))
        same_block = b.icmp_signed("==", blk0, b.load(prev_block))
        with b.if_then(b.and_(same_block, b.icmp_signed("<", ep0, b.load(prev_ep)))):
            b.ret(c(IRREGULAR, I32))       # an interval coming back: the caller judges these records
        b.store(b.add(b.load(stamp), c(1)), stamp)   # a fresh stamp: kept accesses are forgotten
        b.store(blk0, prev_block)
        b.store(ep0, prev_ep)
        # ... and its end, and whether it writes
        b.store(start, e_v)
        b.store(ll.Constant(I1, 0), hw_v)
        with f.while_(lambda: b.icmp_signed("<", b.load(e_v), n)) as end:
            rp = rp_of(b.load(e_v))
            with b.if_then(mine(rp)):
                blk, ep = key(rp)
                with b.if_then(b.or_(b.icmp_signed("!=", blk, blk0), b.icmp_signed("!=", ep, ep0))):
                    b.branch(end)
                fl = f.ld(a["t_flags"], b.sext(_field(b, rp, "instr", I32), I64))
                w = b.icmp_signed("!=", b.and_(fl, c(F_WRITE, I32)), c(0, I32))
                b.store(b.or_(b.load(hw_v), w), hw_v)
            b.store(b.add(b.load(e_v), c(1)), e_v)
        stop = b.load(e_v)
        with b.if_then(b.load(hw_v)):
            _walk(f, per_record, per_unit, start, stop)
        b.store(stop, r_v)

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
RACE_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, *_COMMON, _N, _N, _P, _P, _P, _P, _N, _N, _N, _P)


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
        self.init = np.empty(nslots, np.int64)      # seq of the unit's first write (see _build_init)
        self.race = np.empty((nslots if race else 0, RACE_STATE), np.int64)
        # np.empty: pages of units never accessed are never touched
        self.kept = np.empty((nslots if race else 0, GROUP_CAP, KEPT), np.int64)
        self.reset()

    def reset(self) -> None:
        """Forget everything (after a scan that stopped half-way)."""
        self.init[:] = -1
        self.race[:, 0] = -1
        self.stamps[:] = 0


def scan(recptr: np.ndarray, seq: np.ndarray, space: int, tab: Tables, unit: int,
         shadow: Shadow, its: bool, race: bool, init: bool, sync_tables: tuple = None) -> tuple:
    """(status, race table, init table) of the records at addresses `recptr`
    (abi.TRACE_DTYPE, complete blocks in emulation order) of one `space`,
    launch-wide indices `seq`. race table[kind, line, other] = (count,
    block, thread in block, other block, other thread, unit), kind an index
    of racecheck.KINDS, lines compact indices (tab.lines); init
    table[line] = (count, block, thread in block, unit). sync_tables:
    (base, first block, warps per block, calls) of racecheck.WarpSyncs.tables,
    for warps with a partial __syncwarp."""
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
        fn = engine.native_function(SYMBOLS[1], lambda: _module(_build_race), RACE_PROTOTYPE)
        base, block0, nwarps, calls = sync_tables or (np.zeros(1, np.int64), 0, 0, np.zeros(1, np.int64))
        status = fn(*common, int(its), L, sh.race.ctypes.data,
                    sh.kept.ctypes.data, race_out.ctypes.data, base.ctypes.data, block0, nwarps,
                    len(base) if sync_tables else 0, calls.ctypes.data)
    if status != OK:
        shadow.reset()
        return status, None, None
    return OK, race_out, init_out
