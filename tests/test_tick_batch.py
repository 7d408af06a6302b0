"""The per-line counts of a straight-line run are added once where the run
ends (gpuemu/jit/tick_batch.py): the IR holds one add per counter and run,
placed before the run's terminator, before a call that is not an LLVM
intrinsic and before the builder moves; and a kernel counts exactly what it
counts with every operation adding its own (TickBuilder.BATCH off), in every
mode and when the trace buffer fills mid-kernel."""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np
import pytest

import gpuemu
from gpuemu.jit import abi, compiler, tick_batch
from gpuemu.jit.lane_types import I32, I64
from gpuemu.jit.tick_batch import TickBuilder
from gpuemu.machine import executor


def _builder():
    """A TickBuilder in a function f(i32 mask, i64* counters, i8* frame)."""
    m = ll.Module()
    fty = ll.FunctionType(ll.VoidType(), [I32, I64.as_pointer(), ll.IntType(8).as_pointer()])
    fn = ll.Function(m, fty, "f")
    b = TickBuilder(fn.append_basic_block("entry"))
    mask, counters, frame = fn.args
    b.counters = counters
    b.icount = lambda: b.bitcast(b.gep(frame, [ll.Constant(I64, abi.F_ICOUNT)]), I64.as_pointer())
    return b, fn, mask


def _adds(block) -> list:
    """The constants that counter adds of `block` multiply by, in order."""
    return [int(i.operands[1].constant) for i in block.instructions
            if i.opname == "mul" and isinstance(i.operands[1], ll.Constant)]


def test_the_ticks_of_a_run_are_added_once_before_its_terminator():
    b, fn, mask = _builder()
    for _ in range(3):
        b.tick(mask, 7, 0, 1)
    b.tick(mask, 7, 0, 2)
    assert _adds(fn.blocks[0]) == []            # nothing emitted yet
    b.ret_void()
    # warp_instructions, thread_instructions and F_ICOUNT, each once, by 5
    assert _adds(fn.blocks[0]) == [5, 5, 5]
    assert fn.blocks[0].instructions[-1] is fn.blocks[0].terminator


def test_ticks_of_other_columns_add_to_that_counter_alone():
    b, fn, mask = _builder()
    b.tick(mask, 2, 3, 2)                       # two fences
    b.ret_void()
    geps = [i for i in fn.blocks[0].instructions if i.opname == "getelementptr"]
    assert [int(g.indices[0].constant) for g in geps] == [2 * abi.N_LINE_COUNTERS + 3]
    assert _adds(fn.blocks[0]) == [2]


def test_a_call_that_is_not_an_intrinsic_ends_the_run():
    b, fn, mask = _builder()
    helper = ll.Function(fn.module, ll.FunctionType(ll.VoidType(), []), "helper")
    ctpop = fn.module.declare_intrinsic("llvm.ctpop", [I32])
    b.tick(mask, 1, 0, 1)
    b.call(ctpop, [mask])                       # an intrinsic: the run goes on
    b.tick(mask, 1, 0, 1)
    call = b.call(helper, [])
    ins = fn.blocks[0].instructions
    assert _adds(fn.blocks[0]) == [2, 2, 2]
    assert max(i for i, x in enumerate(ins) if x.opname == "store") < ins.index(call)


def test_moving_the_builder_ends_the_run_in_the_block_it_leaves():
    b, fn, mask = _builder()
    other = fn.append_basic_block("other")
    b.tick(mask, 1, 0, 4)
    b.position_at_end(other)
    b.ret_void()
    assert _adds(fn.blocks[0]) == [4, 4, 4] and _adds(other) == []


def test_ticks_under_different_masks_are_weighed_apart_and_stored_once():
    b, fn, mask = _builder()
    half = b.and_(mask, ll.Constant(I32, 0xFFFF))
    b.tick(mask, 1, 0, 1)
    b.tick(half, 1, 0, 3)
    b.tick(mask, 1, 0, 1)
    b.ret_void()
    # each counter: + (mask's weight) * 2 + (half's weight) * 3
    assert _adds(fn.blocks[0]) == [2, 3, 2, 3, 2, 3]
    assert sum(1 for i in fn.blocks[0].instructions if i.opname == "store") == 3


def test_a_single_operation_adds_its_weight_without_a_multiply():
    b, fn, mask = _builder()
    b.tick(mask, 1, 0, 1)
    b.ret_void()
    ops = [i.opname for i in fn.blocks[0].instructions]
    assert "mul" not in ops and ops.count("add") == 3 and ops.count("store") == 3


SRC = r"""
__device__ int clampi(int v, int lo, int hi) { if (v < lo) return lo; if (v > hi) return hi; return v; }
extern "C" __global__ void k(const int* a, int* out, int* hist, int n) {
    __shared__ int s[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    int x = i < n ? a[i] : 0;
    s[t] = x;
    __syncthreads();
    int acc = 0;
    for (int j = 0; j < 16; j++) {
        if ((x + j) % 3 == 0) continue;
        acc += s[(t + j) % 128] * (j & 1 ? 2 : -1);
        if (acc > 1000) break;
    }
    switch (t & 3) { case 0: acc += 1; case 1: acc *= 2; break; default: acc -= 3; }
    __threadfence_block();
    atomicAdd(&hist[clampi(acc, -4, 4) + 4], 1);
    int y = t & 1 ? (t & 2 ? acc : -acc) : t & 4 ? 7 : x;
    if (i < n) out[i] = y + clampi(x, 0, 50);
}
"""


def _launch(mode: str, **options):
    k = gpuemu.RawModule(code=SRC).get_function("k")
    n = 300
    a = (np.arange(n, dtype=np.int32) * 37) % 101 - 20
    out = np.zeros(n, np.int32)
    hist = np.zeros(9, np.int32)
    la = k(3, 128, (a, out, hist, np.int32(n)), mode=mode, **options)
    return out.tolist(), hist.tolist(), la.stats, la.stats_by_line


@pytest.fixture
def small_trace(monkeypatch):
    """A trace buffer of a few records: warps stop at statements to drain it."""
    monkeypatch.setattr(executor, "TRACE_CAPACITY", 4)


def _all_modes():
    return [_launch("functional"), _launch("timing"), _launch("functional", check=True)]


def test_batched_counts_equal_counts_added_one_by_one(monkeypatch):
    want = _all_modes()
    monkeypatch.setattr(tick_batch.TickBuilder, "BATCH", False)
    # not the batched code from the caches
    monkeypatch.setattr(compiler, "_REVISION", "one-by-one-" + compiler._jit_revision())
    got = _all_modes()
    assert got == want
    assert want[0][2]["warp_instructions"] > 0 and want[0][2]["divergent_branches"] > 0
    assert want[0][2]["barriers"] > 0 and want[0][2]["fences"] > 0


def test_batched_counts_are_exact_when_the_trace_buffer_fills(monkeypatch, small_trace):
    want = _launch("timing")
    monkeypatch.setattr(tick_batch.TickBuilder, "BATCH", False)
    monkeypatch.setattr(compiler, "_REVISION", "one-by-one-" + compiler._jit_revision())
    assert _launch("timing") == want
