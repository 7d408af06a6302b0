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
run) keeps the warp ready for the next round, as in the Python loop. Python then does what
`_run_block` does for that event and calls again; the loop resumes where
it stopped (its state lives in a small int32 array). So a block costs one
Python call instead of one per warp event, and the GIL is free for the
other block workers while it runs (ctypes releases it).

Launches with a seeded store order, another warp scheduler or timing
mode's recorder use the Python loop (executor._run_block), the readable reference this one is
tested against (tests/test_block_runner.py).

State array (int32): cursor (next entry of the round), event, entry of
the event, entries (warps and fragments), entries of this round, then one
state per entry (0 ready, 1 waiting, 2 exited).
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import abi
from gpuemu.jit import engine

from .thread_scheduling import split_warp
from .warp_scheduler import LooseRoundRobin

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
SYMBOL = "gpuemu_run_block"
# codes the native loop returns
DONE, EVENT, DIVERGED, MISMATCH = 0, 1, 2, 3
READY, WAITING, EXITED = 0, 1, 2
# state array fields before the per-entry states (entries: the block's warps,
# then warp fragments of independent thread scheduling)
CURSOR, EVENT_F, WARP_F, N_F, ROUND_F = range(5)
HEAD = 5

def _build_ir() -> str:
    m = ll.Module(name="block_runner")
    _build_block_fn(m, SYMBOL)
    return str(m)


def _build_block_fn(m: ll.Module, name: str) -> ll.Function:
    """Define the one-block loop as function `name` of module `m`."""
    warp_fn_t = ll.FunctionType(I32, [I8.as_pointer(), I8.as_pointer()])
    ft = ll.FunctionType(I32, [I64, I64.as_pointer(), I64, I8.as_pointer(), I32.as_pointer()])
    fn = ll.Function(m, ft, name)
    fn_addr, fptrs, nw, ctx, st = fn.args
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
    frame = b.inttoptr(b.load(b.gep(fptrs, [w])), I8.as_pointer())
    ev = b.call(warp_fn, [frame, ctx])
    on_barrier = fn.append_basic_block("barrier")
    not_barrier = fn.append_basic_block("not_barrier")
    on_exit = fn.append_basic_block("exit")
    other = fn.append_basic_block("other")
    b.cbranch(b.icmp_signed("==", ev, c32(abi.EV_BARRIER)), on_barrier, not_barrier)

    b.position_at_end(not_barrier)
    not_exit = fn.append_basic_block("not_exit")
    b.cbranch(b.icmp_signed("==", ev, c32(abi.EV_EXIT)), on_exit, not_exit)
    b.position_at_end(not_exit)              # a yield: stays ready, the next round runs it on
    b.cbranch(b.icmp_signed("==", ev, c32(abi.EV_YIELD)), nxt, other)

    b.position_at_end(on_exit)
    b.store(c32(EXITED), state_ptr(w))
    b.branch(nxt)

    b.position_at_end(other)             # trace full, split, fault, timeout: Python decides
    leave(EVENT, w, ev, w)

    b.position_at_end(on_barrier)
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


BATCH_SYMBOL = "gpuemu_run_blocks"


def _build_batch_ir() -> str:
    """gpuemu_run_blocks(fn, fptrs, nw, ctx, st, j0, nblocks): blocks j0..nblocks-1
    of a batch, each as gpuemu_run_block from a fresh state (block j's warps are
    fptrs[j*nw : j*nw+nw]); returns DONE, or the first other code with st[BLOCK]
    = the block it came from, for Python to finish that block."""
    m = ll.Module(name="block_batch")
    inner = _build_block_fn(m, "gpuemu_run_block_inner")
    inner.linkage = "internal"
    ft = ll.FunctionType(I32, [I64, I64.as_pointer(), I64, I8.as_pointer(), I32.as_pointer(),
                               I64, I64])
    fn = ll.Function(m, ft, BATCH_SYMBOL)
    fn_addr, fptrs, nw, ctx, st, j0, nblocks = fn.args
    c32 = lambda v: ll.Constant(I32, v)  # noqa: E731
    c64 = lambda v: ll.Constant(I64, v)  # noqa: E731
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    j_v = b.alloca(I64, name="j")
    b.store(j0, j_v)
    memset = m.declare_intrinsic("llvm.memset", [I8.as_pointer(), I64])
    head, body, done = (fn.append_basic_block(n) for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    j = b.load(j_v)
    b.cbranch(b.icmp_signed("<", j, nblocks), body, done)
    b.position_at_end(body)
    # fresh state: every field and per-warp state 0, entries = round = nw
    b.call(memset, [b.bitcast(st, I8.as_pointer()), ll.Constant(I8, 0),
                    b.mul(b.add(nw, c64(HEAD)), c64(4)), ll.Constant(I1, 0)])
    nw32 = b.trunc(nw, I32)
    b.store(nw32, b.gep(st, [c32(N_F)]))
    b.store(nw32, b.gep(st, [c32(ROUND_F)]))
    code = b.call(inner, [fn_addr, b.gep(fptrs, [b.mul(j, nw)]), nw, ctx, st])
    ok, stop = fn.append_basic_block("ok"), fn.append_basic_block("stop")
    b.cbranch(b.icmp_signed("==", code, c32(DONE)), ok, stop)
    b.position_at_end(ok)
    b.store(b.add(j, c64(1)), j_v)
    b.branch(head)
    b.position_at_end(stop)
    b.store(b.trunc(j, I32), b.gep(st, [b.add(nw, c64(HEAD))]))
    b.ret(code)
    b.position_at_end(done)
    b.ret(c32(DONE))
    return str(m)


PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_void_p, ctypes.c_void_p)


def _function():
    return engine.native_function(SYMBOL, _build_ir, PROTOTYPE)


BATCH_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p,
                                   ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int64, ctypes.c_int64)


def _batch_function():
    return engine.native_function(BATCH_SYMBOL, _build_batch_ir, BATCH_PROTOTYPE)


def usable(run) -> bool:
    """The native loop applies: the default scheduler, no seeded store order,
    no timing-mode recorder (it hears of every barrier and exit)."""
    return (type(run.scheduler) is LooseRoundRobin and run.options.get("seed") is None
            and getattr(run, "recorder", None) is None)


def run_block(run, j: int, idx: tuple) -> None:
    """Run the warps of the batch's block j until all have exited (as
    LaunchRun._run_block), handling in Python the events the loop hands back."""
    nw = run._nw
    first = j * nw
    scratch = run.__dict__.get("_block_runner_scratch")
    if scratch is None:                  # per run (and per block worker): state, frame pointers
        st, fptrs = np.zeros(HEAD + 2 * nw, dtype=np.int32), np.zeros(2 * nw, dtype=np.int64)
        scratch = run._block_runner_scratch = (_function(), st, fptrs, st.ctypes.data,
                                               fptrs.ctypes.data, run.ck.address)
    fn, st, fptrs, st_p, fptrs_p, addr = scratch
    st.fill(0)
    st[N_F] = st[ROUND_F] = nw
    fptrs[:nw] = run._fptr_array[first:first + nw]
    code = fn(addr, fptrs_p, nw, run._ctxp, st_p)
    if code != DONE:                     # events: the slow path, in Python
        _events(run, j, idx, code, st, fptrs)


def batch_usable(run) -> bool:
    """A whole batch in one native call: the native loop applies and no
    per-block bookkeeping is needed (counters off: issue cycles are charged
    to each block's SM, which needs Python between blocks)."""
    return usable(run) and not run.want_stats and not getattr(run, "_tracing", False)


def run_batch(run, blocks: list) -> None:
    """Run every block of the (already reset) batch, as run_block on each in
    turn, with one native call for the blocks that need no Python: a block
    whose loop hands back an event is finished by run_block's slow path."""
    nw = run._nw
    scratch = run.__dict__.get("_block_batch_scratch")
    if scratch is None:                  # per run (and per block worker)
        st = np.zeros(HEAD + nw + 1, dtype=np.int32)
        scratch = run._block_batch_scratch = (_batch_function(), st, st.ctypes.data)
    fn, st, st_p = scratch
    j, n = 0, len(blocks)
    while j < n:
        code = fn(run.ck.address, run._fptr_array.ctypes.data, nw, run._ctxp, st_p, j, n)
        if code == DONE:
            return
        j = int(st[HEAD + nw])
        first = j * nw
        # the slow path keeps its own state and frame pointers (a split warp adds entries)
        bst = np.zeros(HEAD + 2 * nw, dtype=np.int32)
        bst[:HEAD + nw] = st[:HEAD + nw]
        fptrs = np.zeros(2 * nw, dtype=np.int64)
        fptrs[:nw] = run._fptr_array[first:first + nw]
        _events(run, j, blocks[j][1], code, bst, fptrs)
        j += 1


def _events(run, j: int, idx: tuple, code: int, st: np.ndarray, fptrs: np.ndarray) -> None:
    """Handle what the native loop handed back, call it again, until the block is done."""
    fn = _function()
    nw = run._nw
    first = j * nw
    rows = [run._i32[first + w] for w in range(nw)]
    fragments = []                       # frames of warp fragments, kept alive here
    cap = len(fptrs)
    ctx = run.ctx
    while code != DONE:
        w = int(st[WARP_F])
        n = int(st[N_F])
        if code == DIVERGED:
            run._barrier_divergence(idx, int(rows[w][abi.F_WARP // 4]), rows[w])
        elif code == MISMATCH:           # every live warp waits, not at one barrier
            waiting = [k for k in range(n) if st[HEAD + k] == WAITING]
            run._barrier_mismatch(idx, waiting, rows)
            st[HEAD:HEAD + n][st[HEAD:HEAD + n] == WAITING] = READY
            st[CURSOR], st[ROUND_F] = 0, n
        elif int(st[EVENT_F]) == abi.EV_TRACE_FULL:
            if ctx[abi.C_TRACE_LEN]:
                run.drain()
            else:                      # one statement needs more room than there is
                run._grow_trace()
        elif int(st[EVENT_F]) == abi.EV_SPLIT:   # a new fragment, ready from the next round
            frag = split_warp(rows[w], run.meta.frame_bytes)
            fragments.append(frag)
            if n == cap:
                cap *= 2
                st = np.concatenate([st, np.zeros(cap - n, dtype=np.int32)])
                fptrs = np.concatenate([fptrs, np.zeros(cap - n, dtype=np.int64)])
            fptrs[n] = frag.ctypes.data
            rows.append(frag.view(np.int32))
            st[HEAD + n] = READY
            st[N_F] = n + 1
            st[CURSOR] = w + 1
        else:
            run._fail(int(st[EVENT_F]), idx, w, rows, st[HEAD:HEAD + n].tolist())
        code = fn(run.ck.address, fptrs.ctypes.data, nw, run._ctxp, st.ctypes.data)
