"""The loop that runs one block's warps, as native code.

The rule is executor.LaunchRun._run_block's (loose round robin, the default
warp scheduler): each round, every ready warp in index order runs until
its next event; a barrier waits until every warp that has not exited waits
at the same `__syncthreads()`, then all go on. This module runs that loop
in native code, one call per block, and comes back to Python only for what
needs it: a full trace buffer, a fault or timeout, a warp that splits
(independent thread scheduling: the fragment becomes one more entry), a
warp reaching a barrier with some of its live lanes elsewhere, warps
waiting at different barriers. A yield (a long loop letting other warps
run) keeps the warp ready for the next round, as in the Python loop; once
the warp has taken the state's SPIN_F back edges (0: SPIN_FIRST) the
yield comes back to Python too, which asks whether the block spins
(executor.LaunchRun._spun). Python then does what
`_run_block` does for that event and calls again; the loop resumes where
it stopped (its state lives in a small int32 array). So a block costs one
Python call instead of one per warp event, and the GIL is free for the
other block workers while it runs (ctypes releases it).

Launches with a seeded store order or another warp scheduler use the
Python loop (executor._run_block), the readable reference this one is
tested against (tests/test_block_runner.py). Timing mode's recorder hears
of every barrier and exit: the loop appends them to the recorder's event
buffer (warp_trace.TraceRecorder.ev_buf: warp, kind, icount, line), and
comes back to Python only when the buffer is full.

State array (int32): cursor (next entry of the round), event, entry of
the event, entries (warps and fragments), entries of this round, then one
the back edges after which a yield comes back to Python (SPIN_F), then one
state per entry (0 ready, 1 waiting, 2 exited).
"""
from __future__ import annotations

import ctypes
import threading
from functools import partial

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import abi, direct_call
from gpuemu.jit import engine

from . import cache_lines, range_handout
from .thread_scheduling import split_warp
from .warp_scheduler import LooseRoundRobin

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
SYMBOL = "gpuemu_run_block"
# codes the native loop returns
DONE, EVENT, DIVERGED, MISMATCH, EVENTS_FULL = 0, 1, 2, 3, 4
EV_BARRIER_KIND, EV_EXIT_KIND = 1, 2      # warp_trace.BARRIER, warp_trace.EXIT
READY, WAITING, EXITED = 0, 1, 2
# state array fields before the per-entry states (entries: the block's warps,
# then warp fragments of independent thread scheduling)
CURSOR, EVENT_F, WARP_F, N_F, ROUND_F, SPIN_F = range(6)
HEAD = 6
# a yield of a warp past this many loop back edges asks Python whether its
# block spins (the state's SPIN_F raises it); shorter loops never come back
SPIN_FIRST = 1 << 14

def _build_ir() -> str:
    m = ll.Module(name="block_runner")
    _build_block_fn(m, SYMBOL)
    return str(m)


def _build_block_fn(m: ll.Module, name: str) -> ll.Function:
    """Define the one-block loop as function `name` of module `m`."""
    warp_fn_t = ll.FunctionType(I32, [I8.as_pointer(), I8.as_pointer()])
    ft = ll.FunctionType(I32, [I64, I64.as_pointer(), I64, I8.as_pointer(), I32.as_pointer(),
                               I64.as_pointer(), I64.as_pointer()])
    fn = ll.Function(m, ft, name)
    fn_addr, fptrs, nw, ctx, st, evb, evs = fn.args
    c32 = lambda v: ll.Constant(I32, v)  # noqa: E731
    c64 = lambda v: ll.Constant(I64, v)  # noqa: E731
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    warp_fn = b.inttoptr(fn_addr, warp_fn_t.as_pointer())
    w_v = b.alloca(I64, name="w")
    i_v = b.alloca(I64, name="i")
    live_v = b.alloca(I32, name="live")
    wait_v = b.alloca(I32, name="waiting")
    point_v = b.alloca(I32, name="point")
    same_v = b.alloca(I1, name="same")
    b.store(b.sext(b.load(b.gep(st, [c32(CURSOR)])), I64), w_v)

    def state_ptr(w):
        return b.gep(st, [b.add(b.trunc(w, I32), c32(HEAD))])

    def field(i):
        return b.sext(b.load(b.gep(st, [c32(i)])), I64)

    def frame_i32(w, off):
        f = b.inttoptr(b.load(b.gep(fptrs, [w])), I8.as_pointer())
        return b.load(b.bitcast(b.gep(f, [c64(off)]), I32.as_pointer()))

    def leave(code, w, ev, cursor):
        b.store(b.trunc(cursor, I32), b.gep(st, [c32(CURSOR)]))
        b.store(ev, b.gep(st, [c32(EVENT_F)]))
        b.store(b.trunc(w, I32), b.gep(st, [c32(WARP_F)]))
        b.ret(c32(code))

    loop = fn.append_basic_block("loop")
    visit = fn.append_basic_block("visit")
    call = fn.append_basic_block("call")
    nxt = fn.append_basic_block("next")
    round_end = fn.append_basic_block("round_end")
    b.branch(loop)

    b.position_at_end(loop)
    w = b.load(w_v)
    b.cbranch(b.icmp_signed("<", w, field(ROUND_F)), visit, round_end)

    b.position_at_end(visit)
    b.cbranch(b.icmp_signed("==", b.load(state_ptr(w)), c32(READY)), call, nxt)

    b.position_at_end(call)
    # timing mode: no room for one more event record -> Python empties the buffer
    recording = b.icmp_unsigned("!=", b.ptrtoint(evs, I64), c64(0))
    full = fn.append_basic_block("events_full")
    run_warp = fn.append_basic_block("run_warp")
    room = fn.append_basic_block("room")
    b.cbranch(recording, room, run_warp)
    b.position_at_end(room)
    b.cbranch(b.icmp_signed(">=", b.load(evs), b.load(b.gep(evs, [c64(1)]))), full, run_warp)
    b.position_at_end(full)
    leave(EVENTS_FULL, w, c32(0), w)
    b.position_at_end(run_warp)
    frame = b.inttoptr(b.load(b.gep(fptrs, [w])), I8.as_pointer())
    ev = b.call(warp_fn, [frame, ctx])

    def record(kind):
        """Append (warp, kind, icount, line) to the event buffer when recording."""
        rec_bb, go_on = fn.append_basic_block("record"), fn.append_basic_block("recorded")
        b.cbranch(recording, rec_bb, go_on)
        b.position_at_end(rec_bb)
        n = b.load(evs)
        base = b.mul(n, c64(4))
        g = b.add(b.mul(b.sext(frame_i32(w, abi.F_BLOCK), I64), nw), b.sext(frame_i32(w, abi.F_WARP), I64))
        fr = b.inttoptr(b.load(b.gep(fptrs, [w])), I8.as_pointer())
        icount = b.load(b.bitcast(b.gep(fr, [c64(abi.F_ICOUNT)]), I64.as_pointer()))
        line = b.sext(frame_i32(w, abi.F_EVENT_LINE), I64) if kind == EV_BARRIER_KIND else c64(0)
        for k, v in enumerate((g, c64(kind), icount, line)):
            b.store(v, b.gep(evb, [b.add(base, c64(k))]))
        b.store(b.add(n, c64(1)), evs)
        b.branch(go_on)
        b.position_at_end(go_on)

    on_barrier = fn.append_basic_block("barrier")
    not_barrier = fn.append_basic_block("not_barrier")
    on_exit = fn.append_basic_block("exit")
    other = fn.append_basic_block("other")
    b.cbranch(b.icmp_signed("==", ev, c32(abi.EV_BARRIER)), on_barrier, not_barrier)

    b.position_at_end(not_barrier)
    not_exit = fn.append_basic_block("not_exit")
    b.cbranch(b.icmp_signed("==", ev, c32(abi.EV_EXIT)), on_exit, not_exit)
    b.position_at_end(not_exit)              # a yield: stays ready, the next round runs it on
    on_yield = fn.append_basic_block("yield")
    b.cbranch(b.icmp_signed("==", ev, c32(abi.EV_YIELD)), on_yield, other)

    b.position_at_end(on_yield)              # ... past SPIN_F back edges Python looks first
    edges = b.load(b.bitcast(b.gep(frame, [c64(abi.F_BACKEDGES)]), I64.as_pointer()))
    at = field(SPIN_F)
    at = b.select(b.icmp_signed("==", at, c64(0)), c64(SPIN_FIRST), at)
    spun = fn.append_basic_block("spun")
    b.cbranch(b.icmp_signed(">=", edges, at), spun, nxt)
    b.position_at_end(spun)
    leave(EVENT, w, ev, b.add(w, c64(1)))

    b.position_at_end(on_exit)
    record(EV_EXIT_KIND)
    b.store(c32(EXITED), state_ptr(w))
    b.branch(nxt)

    b.position_at_end(other)             # trace full, split, fault, timeout: Python decides
    leave(EVENT, w, ev, w)

    b.position_at_end(on_barrier)
    record(EV_BARRIER_KIND)
    b.store(c32(WAITING), state_ptr(w))
    cur = frame_i32(w, abi.F_CUR)
    valid = frame_i32(w, abi.F_VALID)
    exited = frame_i32(w, abi.F_EXITED)
    missing = b.and_(b.xor(cur, valid), b.not_(exited))
    diverged = fn.append_basic_block("diverged")
    b.cbranch(b.icmp_unsigned("!=", missing, c32(0)), diverged, nxt)

    b.position_at_end(diverged)
    leave(DIVERGED, w, ev, b.add(w, c64(1)))

    b.position_at_end(nxt)
    b.store(b.add(w, c64(1)), w_v)
    b.branch(loop)

    # ---- end of a round: all exited -> done; all live waiting at one barrier -> go on
    b.position_at_end(round_end)
    for v, x in ((i_v, c64(0)), (live_v, c32(0)), (wait_v, c32(0)), (point_v, c32(-1)),
                 (same_v, ll.Constant(I1, 1))):
        b.store(x, v)
    scan = fn.append_basic_block("scan")
    scan_w = fn.append_basic_block("scan_warp")
    scan_wait = fn.append_basic_block("scan_waiting")
    scan_next = fn.append_basic_block("scan_next")
    scan_done = fn.append_basic_block("scan_done")
    b.branch(scan)

    b.position_at_end(scan)
    i = b.load(i_v)
    b.cbranch(b.icmp_signed("<", i, field(N_F)), scan_w, scan_done)

    b.position_at_end(scan_w)
    s = b.load(state_ptr(i))
    is_live = b.icmp_signed("!=", s, c32(EXITED))
    b.store(b.add(b.load(live_v), b.zext(is_live, I32)), live_v)
    b.cbranch(b.icmp_signed("==", s, c32(WAITING)), scan_wait, scan_next)

    b.position_at_end(scan_wait)
    b.store(b.add(b.load(wait_v), c32(1)), wait_v)
    pt = frame_i32(i, abi.F_RESUME)
    p0 = b.load(point_v)
    first = b.icmp_signed("==", p0, c32(-1))
    b.store(b.select(first, pt, p0), point_v)
    b.store(b.and_(b.load(same_v), b.or_(first, b.icmp_signed("==", pt, p0))), same_v)
    b.branch(scan_next)

    b.position_at_end(scan_next)
    b.store(b.add(i, c64(1)), i_v)
    b.branch(scan)

    b.position_at_end(scan_done)
    live = b.load(live_v)
    done_bb = fn.append_basic_block("done")
    check_bb = fn.append_basic_block("check")
    same_bb = fn.append_basic_block("same_barrier")
    release_bb = fn.append_basic_block("release")
    mismatch_bb = fn.append_basic_block("mismatch")
    new_round = fn.append_basic_block("new_round")
    b.cbranch(b.icmp_signed("==", live, c32(0)), done_bb, check_bb)

    b.position_at_end(done_bb)
    leave(DONE, c64(0), c32(0), c64(0))

    b.position_at_end(check_bb)              # some warps yielded: they run on first
    b.cbranch(b.icmp_signed("==", b.load(wait_v), live), same_bb, new_round)

    b.position_at_end(same_bb)
    b.cbranch(b.load(same_v), release_bb, mismatch_bb)

    b.position_at_end(mismatch_bb)           # Python reports it, releases them, calls again
    leave(MISMATCH, c64(0), c32(0), c64(0))

    b.position_at_end(new_round)
    b.store(b.load(b.gep(st, [c32(N_F)])), b.gep(st, [c32(ROUND_F)]))
    b.store(c64(0), w_v)
    b.branch(loop)

    b.position_at_end(release_bb)
    b.store(c64(0), i_v)
    rel = fn.append_basic_block("rel")
    rel_w = fn.append_basic_block("rel_warp")
    rel_set = fn.append_basic_block("rel_set")
    rel_next = fn.append_basic_block("rel_next")
    b.branch(rel)
    b.position_at_end(rel)
    i = b.load(i_v)
    b.cbranch(b.icmp_signed("<", i, field(N_F)), rel_w, new_round)
    b.position_at_end(rel_w)
    b.cbranch(b.icmp_signed("==", b.load(state_ptr(i)), c32(WAITING)), rel_set, rel_next)
    b.position_at_end(rel_set)
    b.store(c32(READY), state_ptr(i))
    b.branch(rel_next)
    b.position_at_end(rel_next)
    b.store(b.add(i, c64(1)), i_v)
    b.branch(rel)
    return fn


def _counted_loop(fn: ll.Function, b: ll.IRBuilder, var, limit, body, start=None) -> None:
    """Emit `for (var = start; var < limit; var++) body(var)` (i64 alloca `var`,
    start 0 unless given); body may branch away but leaves the builder where
    the iteration goes on; the builder is left after the loop."""
    b.store(ll.Constant(I64, 0) if start is None else start, var)
    head, loop, done = (fn.append_basic_block(n) for n in ("for", "for_body", "for_done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.load(var)
    b.cbranch(b.icmp_signed("<", i, limit), loop, done)
    b.position_at_end(loop)
    body(i)
    b.store(b.add(i, ll.Constant(I64, 1)), var)
    b.branch(head)
    b.position_at_end(done)


RANGE_SYMBOL = "gpuemu_run_range"
# fields of the int64 launch array gpuemu_run_range reads (and writes: ISSUED, STOPPED)
# L_SPIN: each block's first SPIN_F (executor.LaunchRun._spin_first; 0: SPIN_FIRST)
(L_TEMPLATE, L_SHARED, L_SHARED_BYTES, L_GRID_X, L_GRID_Y, L_NUM_SMS, L_ISSUE, L_COUNTERS,
 L_NLINES, L_ISSUED, L_STOPPED, L_SPIN) = range(12)
L_FIELDS = 12


# the parts of a warp's header the range loop copies from the template: all but
# threadIdx (3 x 32 lanes x i32), which the warp function writes first, at its
# start (warp_codegen init_warp): a quarter of the bytes, for every warp
_TID_END = abi.F_TID + 3 * abi.WARP * 4
assert _TID_END == abi.F_CUR
_TEMPLATE_PARTS = ((0, abi.F_TID), (_TID_END, abi.HEADER_BYTES))


def _build_range_ir() -> str:
    """gpuemu_run_range(fn, fptrs, nw, ctx, st, lin0, lin1, launch): blocks lin0..lin1-1
    in linear order, each in the one block slot fptrs[0:nw]: its warps' headers
    copied from the template (launch[TEMPLATE], nw rows of HEADER_BYTES; all
    but threadIdx, _TEMPLATE_PARTS), its
    block fields set (linear index, blockIdx from gridDim x and y, SM = linear
    mod SMs, as RoundRobinBlockScheduler), its shared memory zeroed, then run as
    gpuemu_run_block from a fresh state. With launch[ISSUE] (an int64 per SM)
    the block's warp instructions (column 0 of the counters, summed over lines,
    minus launch[ISSUED]) are added to its SM. Returns DONE, or the first other
    code with launch[STOPPED] = the block it came from, for Python to finish."""
    m = ll.Module(name="block_range")
    inner = _build_block_fn(m, "gpuemu_run_block_inner")
    inner.linkage = "internal"
    i8p = I8.as_pointer()
    ft = ll.FunctionType(I32, [I64, I64.as_pointer(), I64, i8p, I32.as_pointer(),
                               I64, I64, I64.as_pointer(), I64.as_pointer(), I64.as_pointer()])
    fn = ll.Function(m, ft, RANGE_SYMBOL)
    fn_addr, fptrs, nw, ctx, st, lin0, lin1, lau, evb, evs = fn.args
    c32 = lambda v: ll.Constant(I32, v)  # noqa: E731
    c64 = lambda v: ll.Constant(I64, v)  # noqa: E731
    no = ll.Constant(I1, 0)
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    lin_v, w_v, l_v, tot_v = (b.alloca(I64, name=n) for n in ("lin", "w", "l", "tot"))
    memset = m.declare_intrinsic("llvm.memset", [i8p, I64])
    memcpy = m.declare_intrinsic("llvm.memcpy", [i8p, i8p, I64])

    def field(i):
        return b.load(b.gep(lau, [c64(i)]))

    tpl = b.inttoptr(field(L_TEMPLATE), i8p)
    shared = b.inttoptr(field(L_SHARED), i8p)
    shared_bytes, gx, gy, nsms = (field(i) for i in (L_SHARED_BYTES, L_GRID_X, L_GRID_Y,
                                                       L_NUM_SMS))

    def one_block(lin):                     # block `lin`: fresh warps, run, count
        bx = b.trunc(b.urem(lin, gx), I32)
        by = b.trunc(b.urem(b.udiv(lin, gx), gy), I32)
        bz = b.trunc(b.udiv(lin, b.mul(gx, gy)), I32)
        sm = b.urem(lin, nsms)
        vals = ((abi.F_BLOCK, b.trunc(lin, I32)), (abi.F_CTAID, bx), (abi.F_CTAID + 4, by),
                (abi.F_CTAID + 8, bz), (abi.F_SM, b.trunc(sm, I32)))

        def fresh_header(w):                # warp w: the template, then the block fields
            frame = b.inttoptr(b.load(b.gep(fptrs, [w])), i8p)
            row = b.gep(tpl, [b.mul(w, c64(abi.HEADER_BYTES))])
            for start, end in _TEMPLATE_PARTS:
                b.call(memcpy, [b.gep(frame, [c64(start)]), b.gep(row, [c64(start)]),
                                c64(end - start), no])
            for off, v in vals:
                b.store(v, b.bitcast(b.gep(frame, [c64(off)]), I32.as_pointer()))
        _counted_loop(fn, b, w_v, nw, fresh_header)
        b.call(memset, [shared, ll.Constant(I8, 0), shared_bytes, no])
        # fresh loop state: every field and per-warp state 0, entries = round = nw
        b.call(memset, [b.bitcast(st, i8p), ll.Constant(I8, 0),
                        b.mul(b.add(nw, c64(HEAD)), c64(4)), no])
        nw32 = b.trunc(nw, I32)
        b.store(nw32, b.gep(st, [c32(N_F)]))
        b.store(nw32, b.gep(st, [c32(ROUND_F)]))
        b.store(b.trunc(field(L_SPIN), I32), b.gep(st, [c32(SPIN_F)]))
        code = b.call(inner, [fn_addr, fptrs, nw, ctx, st, evb, evs])
        ok, stop = fn.append_basic_block("ok"), fn.append_basic_block("stop")
        b.cbranch(b.icmp_signed("==", code, c32(DONE)), ok, stop)

        b.position_at_end(stop)
        b.store(lin, b.gep(lau, [c64(L_STOPPED)]))
        b.ret(code)

        b.position_at_end(ok)
        issue = field(L_ISSUE)
        count, nxt = fn.append_basic_block("count"), fn.append_basic_block("next")
        b.cbranch(b.icmp_unsigned("!=", issue, c64(0)), count, nxt)
        b.position_at_end(count)                # issue cycles: this block's warp instructions
        counters = b.inttoptr(field(L_COUNTERS), I64.as_pointer())
        nlines = field(L_NLINES)
        b.store(c64(0), tot_v)

        def add_line(ln):
            wi = b.load(b.gep(counters, [b.mul(ln, c64(abi.N_LINE_COUNTERS))]))
            b.store(b.add(b.load(tot_v), wi), tot_v)
        _counted_loop(fn, b, l_v, nlines, add_line)
        tot = b.load(tot_v)
        slot = b.gep(b.inttoptr(issue, I64.as_pointer()), [sm])
        b.store(b.add(b.load(slot), b.sub(tot, field(L_ISSUED))), slot)
        b.store(tot, b.gep(lau, [c64(L_ISSUED)]))
        b.branch(nxt)

        b.position_at_end(nxt)
    _counted_loop(fn, b, lin_v, lin1, one_block, start=lin0)
    b.ret(c32(DONE))
    packed = _build_packed_entry(m, fn)
    range_handout.build(m, packed, (A_LIN0, A_LIN1), engine.triple())
    return str(m)


# gpuemu_run_range_packed(argv): gpuemu_run_range with its arguments in one int64
# array, in this order (a ctypes call of its ten arguments, as it took then, cost a
# small launch ~1 us), then ctx_start and ctx_words: when ctx_start is not 0, ctx_words int64 words
# from there are first copied to ctx (a kept launch's ctx made anew, kept_range)
RANGE_ARGS = ("fn", "fptrs", "nw", "ctx", "st", "lin0", "lin1", "launch", "ev_buf", "ev_state",
              "ctx_start", "ctx_words")
PACKED_RANGE_SYMBOL = "gpuemu_run_range_packed"
A_LIN0, A_LIN1, A_EV_BUF, A_EV_STATE, A_CTX_START, A_CTX_WORDS = (
    RANGE_ARGS.index(n) for n in ("lin0", "lin1", "ev_buf", "ev_state", "ctx_start", "ctx_words"))


def _build_packed_entry(m: ll.Module, target: ll.Function) -> ll.Function:
    """gpuemu_run_range_packed(argv) = target(argv[0], ..., argv[9]), each
    argument cast from int64 to target's parameter type, after copying
    argv[ctx_words] words from argv[ctx_start] to ctx when that is not 0."""
    f = ll.Function(m, ll.FunctionType(I32, [I64]), PACKED_RANGE_SYMBOL)
    b = ll.IRBuilder(f.append_basic_block("entry"))
    argv = b.inttoptr(f.args[0], I64.as_pointer())

    def arg(i):
        return b.load(b.gep(argv, [ll.Constant(I64, i)]))
    i8p = I8.as_pointer()
    start = arg(A_CTX_START)
    copy, run = f.append_basic_block("copy"), f.append_basic_block("run")
    b.cbranch(b.icmp_unsigned("!=", start, ll.Constant(I64, 0)), copy, run)
    b.position_at_end(copy)
    memcpy = m.declare_intrinsic("llvm.memcpy", [i8p, i8p, I64])
    b.call(memcpy, [b.inttoptr(arg(RANGE_ARGS.index("ctx")), i8p), b.inttoptr(start, i8p),
                    b.mul(arg(A_CTX_WORDS), ll.Constant(I64, 8)), ll.Constant(I1, 0)])
    b.branch(run)
    b.position_at_end(run)
    vals = []
    for i, t in enumerate(target.function_type.args):
        v = arg(i)
        vals.append(v if t == I64 else b.inttoptr(v, t))
    b.ret(b.call(target, vals))
    return f


PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def _function():
    return engine.native_function(SYMBOL, _build_ir, PROTOTYPE)


RANGE_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64)     # (argv address)


# gpuemu_run_range_packed: _range_function()(address of the RANGE_ARGS array), loaded
# once by engine.native_function (a partial: no Python frame of its own per launch)
_range_function = partial(engine.native_function, PACKED_RANGE_SYMBOL, _build_range_ir, RANGE_PROTOTYPE)


def usable(run) -> bool:
    """The native loop applies: the default scheduler, no seeded store order,
    and a timing-mode recorder, if any, with an event buffer for the loop."""
    rec = getattr(run, "recorder", None)
    return (type(run.scheduler) is LooseRoundRobin and run.options.get("seed") is None
            and (rec is None or hasattr(rec, "ev_state")))


def _event_buffer(run) -> tuple:
    """(buffer, state) pointers of the recorder's event buffer, or (None, None)."""
    rec = getattr(run, "recorder", None)
    if rec is None:
        return None, None
    return rec.ev_buf.ctypes.data, rec.ev_state.ctypes.data


def run_block(run, j: int, idx: tuple) -> None:
    """Run the warps of the batch's block j until all have exited (as
    LaunchRun._run_block), handling in Python the events the loop hands back."""
    nw = run._nw
    first = j * nw
    scratch = run.__dict__.get("_block_runner_scratch")
    if scratch is None:                  # per run (and per block worker): state, frame pointers
        st, fptrs = cache_lines.zeros(HEAD + 2 * nw, np.int32), cache_lines.zeros(2 * nw, np.int64)
        scratch = run._block_runner_scratch = (st, fptrs, st.ctypes.data, fptrs.ctypes.data,
                                               run.ck.address)
    st, fptrs, st_p, fptrs_p, addr = scratch
    st.fill(0)
    st[N_F] = st[ROUND_F] = nw
    st[SPIN_F] = run._spin_first
    fptrs[:nw] = run._fptr_array[first:first + nw]
    code = _function()(addr, fptrs_p, nw, run._ctxp, st_p,   # looked up per call (bench_workers.py)
                       *_event_buffer(run))
    if code != DONE:                     # events: the slow path, in Python
        _events(run, j, idx, code, st, fptrs)


def range_usable(run) -> bool:
    """Whole ranges of blocks per native call (run_range): the native loop
    applies, the blocks run in the default schedule's order, and nothing
    needs Python between blocks (check mode judges and the weak memory model
    holds stores block by block)."""
    return (usable(run) and getattr(run, "checker", None) is None
            and not run._weak_mode())


def _range_scratch(run) -> tuple:
    """Per run (and per block worker): the loop's state, the launch array and
    the argument array of gpuemu_run_range_packed, with its address."""
    nw = run._nw
    st = cache_lines.zeros(HEAD + nw, np.int32)
    lau = cache_lines.zeros(L_FIELDS, np.int64)
    gx, gy, _ = run.shape.grid
    lau[[L_TEMPLATE, L_SHARED, L_SHARED_BYTES, L_GRID_X, L_GRID_Y, L_NUM_SMS]] = (
        run.header_template.ctypes.data, run.shared.ctypes.data, run.shared_stride,
        gx, gy, run.preset.num_sms)
    if run.want_stats:
        lau[L_ISSUE] = run.issue.ctypes.data
    lau[L_COUNTERS], lau[L_NLINES] = run.counters.ctypes.data, len(run.counters)
    argv = (ctypes.c_int64 * len(RANGE_ARGS))(     # items set in a third of numpy's time
        run.ck.address, run._fptr_array.ctypes.data, nw, run._ctxp, st.ctypes.data,
        0, 0, lau.ctypes.data, 0, 0, 0, 0)
    # the address as a c_int64: ctypes passes it without converting an int (0.15 us a call)
    scratch = run._block_range_scratch = (st, lau, argv, ctypes.c_int64(ctypes.addressof(argv)))
    return scratch


def run_range(run, lin0: int, lin1: int) -> None:
    """Run blocks lin0..lin1-1 (linear indices, the default schedule's order)
    in the run's first block slot, as run_block on each in turn, with one
    native call for the blocks that need no Python: a block whose loop hands
    back an event is finished by run_block's slow path and the range goes on.
    With counters on, each block's warp instructions are added to run.issue
    at its SM (as executor._run_batch does)."""
    scratch = run.__dict__.get("_block_range_scratch")
    if scratch is None:
        scratch = _range_scratch(run)
    st, lau, argv, argv_p = scratch
    fn = _range_function()               # looked up per call: benchmarks/bench_workers.py wraps it
    recorded = run.recorder is not None
    argv[A_LIN1] = lin1
    lin = lin0
    while lin < lin1:
        argv[A_LIN0] = lin
        if recorded:
            argv[A_EV_BUF], argv[A_EV_STATE] = _event_buffer(run)
        elif argv[A_EV_STATE]:           # a recorder listened to an earlier range
            argv[A_EV_BUF] = argv[A_EV_STATE] = 0
        code = fn(argv_p)
        if code == DONE:
            return
        lin = _range_event(run, code, st, lau) + 1
        if run._resident is not None:    # a block spun: the rest runs resident (resident_blocks.py)
            return


class KeptRange:
    """A kept launch's argument array and its address (as a c_int64: ctypes passes
    it without converting an int), held together so that the address never
    outlives the array; `call`: gpuemu_run_range_packed on it, a builtin
    function of no arguments (direct_range_call), or None. `call` holds
    only the address: like the argv, whose pointers are the run's buffers,
    it is the run's, and must not be called once the run is gone."""
    __slots__ = ("argv", "address", "call")

    def __init__(self, argv: ctypes.Array) -> None:
        self.argv = argv
        self.address = ctypes.c_int64(ctypes.addressof(argv))
        self.call = direct_range_call(self.address.value)


DIRECT_SYMBOL = "gpuemu_run_range_direct"
_direct: list = []          # [its direct_call.MethodDef] once made (or [None])
_direct_lock = threading.Lock()


def direct_range_call(address: int):
    """gpuemu_run_range_packed(address) as a builtin function of no arguments
    (jit/direct_call.py: bound to the int `address`): the same native call
    as _range_function()(address), the GIL released while it runs, at
    about half a ctypes call's cost (~0.13 against ~0.28 us a small
    launch). None where CPython's C API is not at hand."""
    if not _direct:
        with _direct_lock:
            if not _direct:
                _direct.append(_make_direct())
    ml = _direct[0]
    return direct_call.bind(ml, address) if ml is not None else None


def _make_direct():
    """The direct_call.MethodDef of gpuemu_run_range_direct, or None where it
    cannot be made (no CPython C API, or the wrapper failed to build): kept
    launches then make the ctypes call. Kept for the process: every
    function made from it points at it."""
    try:
        return direct_call.method(DIRECT_SYMBOL, packed_range_address(), I32)
    except Exception:                  # (the ctypes call does the same work)
        return None


def take_ranges_function():
    """range_handout's gpuemu_take_ranges, in the range call's module (loaded once)."""
    return engine.native_function(range_handout.TAKE_SYMBOL, _build_range_ir,
                                  range_handout.TAKE_PROTOTYPE)


def wait_workers_function():
    """range_handout's gpuemu_wait_workers (loaded once)."""
    return engine.native_function(range_handout.WAIT_SYMBOL, _build_range_ir,
                                  range_handout.WAIT_PROTOTYPE)


def packed_range_address() -> int:
    """gpuemu_run_range_packed's address (loaded as it first is asked for)."""
    return ctypes.cast(engine.native_function(PACKED_RANGE_SYMBOL, _build_range_ir, RANGE_PROTOTYPE),
                       ctypes.c_void_p).value


def kept_range(run, blocks: int) -> KeptRange:
    """A kept launch's argument array, made once per kept run:
    gpuemu_run_range_packed's for blocks 0..blocks-1 that first makes the
    run's ctx anew from its _ctx_start (what LaunchRun.renew does with
    ctx=True; launch_cache keeps runs that reach this)."""
    scratch = run.__dict__.get("_block_range_scratch")
    if scratch is None:
        scratch = _range_scratch(run)
    argv = (ctypes.c_int64 * len(RANGE_ARGS))(*scratch[2])
    argv[A_LIN0], argv[A_LIN1] = 0, blocks
    argv[A_EV_BUF] = argv[A_EV_STATE] = 0
    argv[A_CTX_START], argv[A_CTX_WORDS] = run._ctx_start.ctypes.data, len(run._ctx_start)
    return KeptRange(argv)


def kept_event(run, code: int, blocks: int) -> None:
    """A kept launch's rest when its native call (KeptRange) handed back `code` (not DONE)
    at a block that needs Python: that block, then the blocks after it."""
    scratch = run._block_range_scratch
    run_range(run, _range_event(run, code, scratch[0], scratch[1]) + 1, blocks)


def _range_event(run, code: int, st: np.ndarray, lau: np.ndarray) -> int:
    """The range loop handed back `code` at a block that needs Python: finish
    that block (run_block's slow path, from the loop's state `st`), with
    counters on add its warp instructions to its SM; its linear index."""
    nw = run._nw
    lin = int(lau[L_STOPPED])
    # the slow path keeps its own state and frame pointers (a split warp adds entries)
    bst = np.zeros(HEAD + 2 * nw, dtype=np.int32)
    bst[:HEAD + nw] = st
    fptrs = np.zeros(2 * nw, dtype=np.int64)
    fptrs[:nw] = run._fptr_array[:nw]
    gx, gy, _ = run.shape.grid
    _events(run, 0, (lin % gx, lin // gx % gy, lin // (gx * gy)), code, bst, fptrs)
    if lau[L_ISSUE]:
        tot = int(run.counters[:, 0].sum())
        run.issue[lin % run.preset.num_sms] += tot - int(lau[L_ISSUED])
        lau[L_ISSUED] = tot
    return lin


def new_launch(run) -> None:
    """A renewed run starts another launch: its range loop's count of warp
    instructions already given to SMs starts again from 0 (the counters do)."""
    scratch = run.__dict__.get("_block_range_scratch")
    if scratch is not None:
        scratch[1][L_ISSUED] = 0


def _events(run, j: int, idx: tuple, code: int, st: np.ndarray, fptrs: np.ndarray,
            task=None) -> bool:
    """Handle what the native loop handed back, call it again, until the
    block is done (True); a resident block (`task`, resident_blocks.BlockTask:
    its frames, fragments, state) until it spins (False: its state kept)."""
    fn = _function()
    nw = run._nw
    first = j * nw
    if task is None:
        rows = [run._i32[first + w] for w in range(nw)]
        fragments = []                   # frames of warp fragments, kept alive here
    else:
        rows, fragments = task.rows, task.fragments
    cap = len(fptrs)
    while code != DONE:
        w = int(st[WARP_F])
        n = int(st[N_F])
        if code == EVENTS_FULL:           # timing mode: the recorder takes the events
            run.recorder.drain_events()
        elif code == DIVERGED:
            run._barrier_divergence(idx, int(rows[w][abi.F_WARP // 4]), rows[w])
        elif code == MISMATCH:           # every live warp waits, not at one barrier
            waiting = [k for k in range(n) if st[HEAD + k] == WAITING]
            run._barrier_mismatch(idx, waiting, rows)
            st[HEAD:HEAD + n][st[HEAD:HEAD + n] == WAITING] = READY
            st[CURSOR], st[ROUND_F] = 0, n
        elif int(st[EVENT_F]) == abi.EV_TRACE_FULL:
            run.trace_room()
        elif int(st[EVENT_F]) == abi.EV_YIELD:   # past SPIN_F back edges: does the block spin?
            st[SPIN_F], park = run._spun(idx, w, rows, st[HEAD:HEAD + n], task)
            if park:
                return False
        elif int(st[EVENT_F]) == abi.EV_SPLIT:   # a new fragment, ready from the next round
            frag = split_warp(rows[w], run.meta.frame_bytes, run.recorder)
            fragments.append(frag)
            if n == cap:
                cap *= 2
                st = np.concatenate([st, np.zeros(cap - n, dtype=np.int32)])
                fptrs = np.concatenate([fptrs, np.zeros(cap - n, dtype=np.int64)])
                if task is not None:
                    task.st, task.fptrs = st, fptrs
            fptrs[n] = frag.ctypes.data
            rows.append(frag.view(np.int32))
            st[HEAD + n] = READY
            st[N_F] = n + 1
            st[CURSOR] = w + 1
        else:
            run._fail(int(st[EVENT_F]), idx, w, rows, st[HEAD:HEAD + n].tolist())
        code = fn(run.ck.address, fptrs.ctypes.data, nw, run._ctxp, st.ctypes.data,
                  *_event_buffer(run))
    return True
