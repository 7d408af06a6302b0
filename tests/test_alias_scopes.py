"""The warp function's frame and counter accesses are in two scopes that do
not alias (gpuemu/jit/alias_scopes.py): the loads and stores through the
frame argument and the counter array carry them, others do not, and the
tagged code computes and counts what the untagged code does."""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

import gpuemu
from gpuemu.jit import alias_scopes, compiler

SRC = r"""
extern "C" __global__ void k(const float* a, float* out, int n) {
    __shared__ float s[64];
    int t = threadIdx.x;
    float x = a[t], y = 1.0f;
    s[t] = x;
    __syncthreads();
    for (int i = 0; i < n; i++) { y = y * x + s[(t + i) % 64]; x = x - y * 0.5f; if (t & 1) y += 1.0f; }
    out[t] = x + y;
}
"""


def _launch(n: int, **options):
    k = gpuemu.RawModule(code=SRC).get_function("k")
    a = np.arange(64, dtype=np.float32) / 64
    out = np.zeros(64, np.float32)
    la = k(1, 64, (a, out, np.int32(n)), **options)
    return out.tolist(), la.stats, la.stats_by_line


def test_tagged_and_untagged_code_compute_and_count_the_same(monkeypatch):
    want = [_launch(0), _launch(7), _launch(7, mode="timing")]
    monkeypatch.setattr(alias_scopes, "tag", lambda fn, frame, counters: None)
    # not the tagged code from the caches, nor untagged code of an older compiler
    monkeypatch.setattr(compiler, "_REVISION", "untagged-" + compiler._jit_revision())
    got = [_launch(0), _launch(7), _launch(7, mode="timing")]
    assert got == want
    assert want[1][1]["warp_instructions"] > want[0][1]["warp_instructions"] > 0
    assert want[2][1]["cycles"] > 0


def _function():
    """A function of a frame argument (a pointer) and a counter array read from
    its second argument, with one access of each and one of neither."""
    m = ll.Module()
    i64p = ll.IntType(64).as_pointer()
    fn = ll.Function(m, ll.FunctionType(ll.VoidType(), [ll.IntType(8).as_pointer(), i64p]), "f")
    b = ll.IRBuilder(fn.append_basic_block())
    frame, ctx = fn.args
    counters = b.inttoptr(b.load(ctx), i64p)
    slot = b.bitcast(b.gep(frame, [ll.Constant(ll.IntType(64), 56)]), i64p)
    b.store(b.add(b.load(slot), ll.Constant(ll.IntType(64), 1)), slot)
    cell = b.gep(counters, [ll.Constant(ll.IntType(64), 3)])
    b.store(b.add(b.load(cell), ll.Constant(ll.IntType(64), 1)), cell)
    b.ret_void()
    return fn, frame, counters


def test_frame_and_counter_accesses_are_put_in_two_scopes_that_do_not_alias():
    fn, frame, counters = _function()
    alias_scopes.tag(fn, frame, counters)
    ins = [i for i in fn.blocks[0].instructions if i.opname in ("load", "store")]
    ctx_load, frame_ld, frame_st, cnt_ld, cnt_st = ins
    assert not ctx_load.metadata                                  # the ctx: neither
    assert frame_ld.metadata == frame_st.metadata and cnt_ld.metadata == cnt_st.metadata
    assert frame_ld.metadata["alias.scope"] is cnt_ld.metadata["noalias"]
    assert cnt_ld.metadata["alias.scope"] is frame_ld.metadata["noalias"]
    assert frame_ld.metadata["alias.scope"] is not cnt_ld.metadata["alias.scope"]
