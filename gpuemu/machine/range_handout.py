"""Ranges of blocks handed out in native code to the block workers of a
launch without counters, and the launch's end waited for in native code.

Each range is one native call (block_runner.run_range), and between two
calls a worker came back to Python: it took the GIL, asked GuidedRanges
for the next range under a lock, and let the GIL go again. On our
machines (virtual CPUs) a thread that waits for the GIL or a lock sleeps,
and waking it costs the waker 7-20 us and the sleeper 15-50 us more
(measured: queue.SimpleQueue.put to a sleeping thread, 200 wakes), so
every hand-off between two workers in Python was a few tens of
microseconds off a launch of a few milliseconds, and the launch's end
(the calling thread asleep until the last worker let a lock go) another
50-70 us.

Here a worker takes the next range itself, in native code, by an atomic
add on a shared index into the launch's ranges (block_ranges' guided
ones, the order GuidedRanges hands out), and comes back to Python only
where a block needs it (an event: block_runner's codes) or no range is
left. The pool threads then set a flag of their own (release), and the
calling thread, done with its ranges, spins on those flags with the GIL
let go, for at most a bound, instead of sleeping on a lock; once it
holds the GIL again it sets ACK, which each pool thread waits for (also
for at most a bound) before it leaves native code, so that the calling
thread takes the GIL back without waiting for it.

`take_ranges_reference` is the plain-Python rule the native loop follows
(tests/test_range_handout.py holds one to the other).

State (int64, each field on a cache line of its own: cache_lines.LINE):
NEXT, the index of the next range to hand out (>= the number of ranges:
none left; `close` sets it there); ACK; then one DONE flag per pool thread
(0 running, 1 its native loop found no range left, 2 it left otherwise:
an error, whose thread the calling thread then waits for as before).
"""
from __future__ import annotations

import ctypes
import functools
from typing import Callable, Optional

import llvmlite.ir as ll
import numpy as np

from . import cache_lines
from .block_ranges import block_ranges

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)

TAKE_SYMBOL = "gpuemu_take_ranges"
WAIT_SYMBOL = "gpuemu_wait_workers"

WORDS = cache_lines.LINE // 8            # int64 words per field (a line each)
NEXT, ACK, DONE0 = 0, WORDS, 2 * WORDS   # word offsets in the state
RUNNING, FINISHED, LEFT = 0, 1, 2        # a pool thread's DONE flag

# how long a spin lasts at most, in time-stamp counter ticks (llvm.readcyclecounter:
# rdtsc on x86, about 2-3 GHz here), and in loop turns: the bound where that counter
# reads 0 or ticks slowly (aarch64's virtual counter, some 25-100 MHz), 65,536 turns
# of a few ns each there, some 3 ms with x86's PAUSE (about 140 cycles since Skylake)
WAIT_TICKS = 600_000        # the calling thread for the pool threads: some 0.2-0.3 ms
ACK_TICKS = 300_000         # a pool thread for the calling thread's ACK: some 0.1-0.15 ms
MOST_TURNS = 1 << 16

# take_ranges(argv, ranges, n, state, done, nwait): (range index << 3) | code where
# a block of that range handed back code, else, once no range is left, -1 less
# the pool threads whose flags are not FINISHED (the calling thread, done = 0, waits
# for nwait of them; a pool thread sets its flag, the word at `done`)
TAKE_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_int64] * 6)
# wait_workers(state, nthreads): how many pool threads' DONE flags are not FINISHED
WAIT_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
CODE_BITS = 3


def _pause(m: ll.Module, triple: str) -> Optional[ll.Function]:
    """x86's spin-wait hint (PAUSE: Intel SDM vol. 2, "PAUSE - Spin Loop
    Hint"; LLVM's llvm.x86.sse2.pause), or None elsewhere (a plain loop)."""
    if not triple.startswith(("x86_64", "i686", "i386")):
        return None
    return ll.Function(m, ll.FunctionType(ll.VoidType(), []), "llvm.x86.sse2.pause")


def _spin(fn: ll.Function, b: ll.IRBuilder, ready: Callable[[], ll.Value], ticks: ll.Value,
          pause: Optional[ll.Function]) -> None:
    """Loop until ready() (an i1 built fresh each turn) or `ticks` counter
    ticks passed (or MOST_TURNS turns); b ends after the loop."""
    m = fn.module
    clock = m.declare_intrinsic("llvm.readcyclecounter", (), ll.FunctionType(I64, []))
    t0 = b.call(clock, [])
    head, body, out = (fn.append_basic_block(n) for n in ("spin", "spin_turn", "spin_out"))
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    turns = b.phi(I64)
    turns.add_incoming(ll.Constant(I64, 0), pre)
    b.cbranch(ready(), out, body)
    b.position_at_end(body)
    if pause is not None:
        b.call(pause, [])
    more = b.add(turns, ll.Constant(I64, 1))
    turns.add_incoming(more, body)
    late = b.icmp_unsigned(">", b.sub(b.call(clock, []), t0), ticks)
    spent = b.icmp_unsigned(">=", more, ll.Constant(I64, MOST_TURNS))
    b.cbranch(b.or_(late, spent), out, head)
    b.position_at_end(out)


def build(m: ll.Module, packed: ll.Function, argv_lin: tuple, triple: str) -> None:
    """Define gpuemu_take_ranges and gpuemu_wait_workers in `m`, the module of
    block_runner's `packed` range call (gpuemu_run_range_packed(argv)):
    argv_lin, the argv words of a range's first and last-plus-one block."""
    pause = _pause(m, triple)
    c64 = lambda v: ll.Constant(I64, v)  # noqa: E731
    i64p = I64.as_pointer()

    # gpuemu_take_ranges(argv, ranges, n, state, done, nwait)
    fn = ll.Function(m, ll.FunctionType(I64, [I64] * 6), TAKE_SYMBOL)
    argv_a, ranges_a, n, state_a, done_a, nwait = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    argv, ranges, state = (b.inttoptr(v, i64p) for v in (argv_a, ranges_a, state_a))
    loop, run, event, left = (fn.append_basic_block(x) for x in ("take", "run", "event", "left"))
    b.branch(loop)
    b.position_at_end(loop)
    i = b.atomic_rmw("add", b.gep(state, [c64(NEXT)]), c64(1), "seq_cst")
    b.cbranch(b.icmp_signed(">=", i, n), left, run)
    b.position_at_end(run)
    for k, word in enumerate(argv_lin):
        b.store(b.load(b.gep(ranges, [b.add(b.mul(i, c64(2)), c64(k))])), b.gep(argv, [c64(word)]))
    code = b.call(packed, [argv_a])
    b.cbranch(b.icmp_signed("==", code, ll.Constant(I32, 0)), loop, event)
    b.position_at_end(event)
    b.ret(b.or_(b.shl(i, c64(CODE_BITS)), b.zext(code, I64)))
    b.position_at_end(left)
    own, calling = fn.append_basic_block("pool_thread"), fn.append_basic_block("calling_thread")
    b.cbranch(b.icmp_unsigned("!=", done_a, c64(0)), own, calling)
    b.position_at_end(own)                 # a pool thread: its flag, then the calling thread's ACK
    b.store_atomic(c64(FINISHED), b.inttoptr(done_a, i64p), "release", 8)
    ack = b.gep(state, [c64(ACK)])
    _spin(fn, b, lambda: b.icmp_unsigned("!=", b.load_atomic(ack, "acquire", 8), c64(0)),
          c64(ACK_TICKS), pause)
    b.ret(c64(-1))
    b.position_at_end(calling)             # the calling thread: the pool threads' flags
    b.ret(b.sub(c64(-1), b.call(_build_missing(m, pause), [state_a, nwait])))

    # gpuemu_wait_workers(state, nthreads): the same wait, alone (after an error)
    fn = ll.Function(m, ll.FunctionType(I64, [I64, I64]), WAIT_SYMBOL)
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.call(_build_missing(m, pause), list(fn.args)))


def _build_missing(m: ll.Module, pause) -> ll.Function:
    """missing(state, nthreads): spin until every pool thread's DONE flag is
    set, or the bound; how many are not FINISHED (internal to `m`, made once)."""
    name = "gpuemu_handout_missing"
    if name in m.globals:
        return m.globals[name]
    c64 = lambda v: ll.Constant(I64, v)  # noqa: E731
    fn = ll.Function(m, ll.FunctionType(I64, [I64, I64]), name)
    fn.linkage = "internal"
    state_a, nthreads = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    state = b.inttoptr(state_a, I64.as_pointer())
    count, finished = b.alloca(I64), b.alloca(I64)

    def all_set():
        b.store(c64(0), count)
        b.store(c64(0), finished)
        head, body, out = (fn.append_basic_block(x) for x in ("flags", "flag", "flags_out"))
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64)
        k.add_incoming(c64(0), pre)
        b.cbranch(b.icmp_signed("<", k, nthreads), body, out)
        b.position_at_end(body)
        flag = b.load_atomic(b.gep(state, [b.add(c64(DONE0), b.mul(k, c64(WORDS)))]), "acquire", 8)
        b.store(b.add(b.load(count), b.zext(b.icmp_unsigned("!=", flag, c64(RUNNING)), I64)), count)
        b.store(b.add(b.load(finished), b.zext(b.icmp_unsigned("==", flag, c64(FINISHED)), I64)),
                finished)
        k.add_incoming(b.add(k, c64(1)), body)
        b.branch(head)
        b.position_at_end(out)
        return b.icmp_signed("==", b.load(count), nthreads)
    _spin(fn, b, all_set, c64(WAIT_TICKS), pause)
    b.ret(b.sub(nthreads, b.load(finished)))
    return fn


def words(nthreads: int) -> int:
    """The int64 words of the state for `nthreads` pool threads."""
    return DONE0 + max(nthreads, 1) * WORDS


def state(nthreads: int) -> np.ndarray:
    """A handout state for `nthreads` pool threads, all zero (a launch
    starts from zero: kept with the run, filled with 0)."""
    return cache_lines.zeros(words(nthreads), np.int64)


@functools.lru_cache(maxsize=64)
def ranges_array(total: int, nworkers: int, threads_per_block: int) -> np.ndarray:
    """block_ranges' guided ranges of a grid of `total` blocks as int64 pairs
    (lo, hi) for the native loop, in the order they are handed out (kept
    per launch shape, as block_ranges keeps its tuple)."""
    out = np.array([(r.start, r.stop) for r in block_ranges(total, nworkers, threads_per_block)],
                   np.int64)
    out.flags.writeable = False
    return out


def close(st: np.ndarray, n: int) -> None:
    """Hand out nothing more (a range failed: the rest need not run). An
    aligned 8-byte store: the native loop's atomic adds see it whole."""
    st[NEXT] = n


def take_ranges_reference(run_range: Callable[[int, int], int], ranges: np.ndarray,
                          st: np.ndarray, done: Optional[int], take: Callable[[], int]) -> int:
    """The rule of gpuemu_take_ranges in plain Python (without its spins):
    take the next range index (`take`: the atomic add on NEXT), run its
    blocks (`run_range(lo, hi)`: the packed call's code), until a block
    hands back a code (return (index << 3) | code) or no range is left
    (a pool thread, `done` its flag's word, sets its flag; return -1)."""
    n = len(ranges)
    while True:
        i = take()
        if i >= n:
            if done is not None:
                st[done] = FINISHED
            return -1
        code = run_range(int(ranges[i, 0]), int(ranges[i, 1]))
        if code:
            return (i << CODE_BITS) | code
