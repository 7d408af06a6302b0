"""Cooperative groups lower to the intrinsics they stand for (isa/cooperative_groups.py)."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from isa import ir
from isa_ir_walk import compile_kernel, nodes, compile_error

CG = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"


def intrinsics(body: str, params: str = "float *p") -> list:
    return [(x.name, x) for x in nodes(compile_kernel(body, params, CG).body, ir.Intrinsic)]


def launch(src: str, name: str, n_threads: int, *arrays):
    mod = gpuemu.RawModule(code=CG + src)
    return mod.get_function(name)((1,), (n_threads,), arrays)


def test_block_sync_is_syncthreads():
    names = [n for n, _ in intrinsics("cg::thread_block b = cg::this_thread_block(); b.sync(); cg::sync(b);")]
    assert names == ["syncthreads", "syncthreads"]


def test_tile_shuffle_is_shfl_down_sync_with_tile_mask_and_width():
    got = intrinsics("auto t = cg::tiled_partition<8>(cg::this_thread_block()); p[0] = t.shfl_down(p[0], 2);")
    (name, x), = got
    assert name == "shfl_down" and x.args[3].value == 8 and x.args[2].value == 2
    assert isinstance(x.args[0], ir.Binary) and x.args[0].op == "shl" and x.args[0].a.value == 0xFF


def test_warp_tile_mask_is_full():
    (name, x), = intrinsics("cg::thread_block_tile<32> t = cg::tiled_partition<32>(cg::this_thread_block());"
                            " p[0] = t.any(p[0] > 0);")
    assert name == "any" and x.args[0].value == 0xFFFFFFFF


def test_reduce_is_log2_n_xor_shuffles():
    got = intrinsics("auto t = cg::tiled_partition<16>(cg::this_thread_block());"
                     " p[0] = cg::reduce(t, p[0], cg::plus<float>());")
    assert [n for n, _ in got] == ["shfl_xor"] * 4
    assert [x.args[2].value for _, x in got] == [8, 4, 2, 1]


def test_thread_rank_size_group_index_of_block_and_tiles():
    src = r'''
    __global__ void k(unsigned *r)
    {
        cg::thread_block b = cg::this_thread_block();
        cg::thread_block_tile<4> t = cg::tiled_partition<4>(b);
        unsigned i = b.thread_rank();
        r[i * 5 + 0] = b.size();
        r[i * 5 + 1] = t.thread_rank();
        r[i * 5 + 2] = t.meta_group_rank();
        r[i * 5 + 3] = b.thread_index().y;
        r[i * 5 + 4] = t.size() + b.group_index().x;
    }
    '''
    mod = gpuemu.RawModule(code=CG + src)
    r = np.zeros(48 * 5, np.uint32)
    mod.get_function("k")((1,), (16, 3), (r,))
    r = r.reshape(48, 5)
    rank = np.arange(48)
    assert np.array_equal(r[:, 0], np.full(48, 48)) and np.array_equal(r[:, 1], rank % 4)
    assert np.array_equal(r[:, 2], rank // 4) and np.array_equal(r[:, 3], rank // 16)
    assert np.array_equal(r[:, 4], np.full(48, 4))


def test_generic_thread_group_parameter_takes_block_and_tile():
    src = r'''
    __device__ float reduce_sum(cg::thread_group g, float *temp, float val)
    {
        int lane = g.thread_rank();
        for (int i = g.size() / 2; i > 0; i /= 2) {
            temp[lane] = val;
            g.sync();
            if (lane < i) val += temp[lane + i];
            g.sync();
        }
        return val;
    }
    __global__ void k(const float *in, float *out)
    {
        __shared__ float temp[64];
        cg::thread_block b = cg::this_thread_block();
        float v = in[b.thread_rank()];
        float s = reduce_sum(b, temp, v);
        if (b.thread_rank() == 0) out[0] = s;
        cg::thread_block_tile<32> w = cg::tiled_partition<32>(b);
        float ws = reduce_sum(w, temp + 32 * (b.thread_rank() / 32), v);
        b.sync();
        if (w.thread_rank() == 0) out[1 + b.thread_rank() / 32] = ws;
    }
    '''
    a = np.random.default_rng(1).integers(0, 9, 64).astype(np.float32)
    out = np.zeros(3, np.float32)
    launch(src, "k", 64, a, out)
    assert out.tolist() == [a.sum(), a[:32].sum(), a[32:].sum()]


@pytest.mark.parametrize("op,ref", [("cg::plus<int>()", np.sum), ("cg::less<int>()", np.min),
                                    ("cg::greater<int>()", np.max), ("cg::bit_xor<int>()", np.bitwise_xor.reduce)])
def test_reduce_operators_match_numpy(op, ref):
    src = "__global__ void k(const int *in, int *out)\n{\n  auto t = cg::tiled_partition<8>(cg::this_thread_block());\n" \
          f"  out[threadIdx.x] = cg::reduce(t, in[threadIdx.x], {op});\n}}\n"
    a = np.random.default_rng(2).integers(-50, 50, 32).astype(np.int32)
    out = np.zeros(32, np.int32)
    launch(src, "k", 32, a, out)
    assert np.array_equal(out, np.repeat([ref(a[i:i + 8]) for i in range(0, 32, 8)], 8))


def test_inclusive_and_exclusive_scan_of_a_tile():
    src = "__global__ void k(const int *in, int *inc, int *exc)\n{\n" \
          "  auto t = cg::tiled_partition<16>(cg::this_thread_block());\n" \
          "  inc[threadIdx.x] = cg::inclusive_scan(t, in[threadIdx.x]);\n" \
          "  exc[threadIdx.x] = cg::exclusive_scan(t, in[threadIdx.x]);\n}\n"
    a = np.random.default_rng(3).integers(0, 10, 32).astype(np.int32)
    inc, exc = np.zeros(32, np.int32), np.zeros(32, np.int32)
    launch(src, "k", 32, a, inc, exc)
    want = np.concatenate([np.cumsum(a[:16]), np.cumsum(a[16:])])
    assert np.array_equal(inc, want) and np.array_equal(exc, want - a)


def test_tile_ballot_is_relative_to_the_tile():
    src = "__global__ void k(const int *in, unsigned *out)\n{\n" \
          "  auto t = cg::tiled_partition<8>(cg::this_thread_block());\n" \
          "  out[threadIdx.x] = t.ballot(in[threadIdx.x] != 0);\n}\n"
    a = np.random.default_rng(4).integers(0, 2, 32).astype(np.int32)
    out = np.zeros(32, np.uint32)
    launch(src, "k", 32, a, out)
    want = [sum(int(a[g * 8 + j]) << j for j in range(8)) for g in range(4)]
    assert out.tolist() == np.repeat(want, 8).tolist()


def test_coalesced_threads_size_rank_and_leader_shuffle():
    src = "__global__ void k(int *counter, int *slot)\n{\n  if (threadIdx.x % 3 == 0) {\n" \
          "    cg::coalesced_group g = cg::coalesced_threads();\n    int base;\n" \
          "    if (g.thread_rank() == 0) base = atomicAdd(counter, g.size());\n" \
          "    base = g.shfl(base, 0);\n    slot[threadIdx.x] = base + g.thread_rank();\n  }\n}\n"
    counter, slot = np.zeros(1, np.int32), np.full(32, -1, np.int32)
    launch(src, "k", 32, counter, slot)
    assert counter[0] == 11 and slot[::3].tolist() == list(range(11)) and (slot[1::3] == -1).all()


def test_tile_size_must_be_a_power_of_two_up_to_32():
    e = compile_error(CG + "__global__ void k() {\n  auto t = cg::tiled_partition<12>(cg::this_thread_block());\n}\n")
    assert "power of two from 1 to 32, not 12" in e.message and e.line == 4


def test_reduce_and_scan_take_a_lambda_operator():
    src = "__global__ void k(const int *in, int *r, int *s)\n{\n  auto t = cg::tiled_partition<8>(cg::this_thread_block());\n" \
          "  r[threadIdx.x] = cg::reduce(t, in[threadIdx.x], [](int a, int b) { return a > b ? a : b; });\n" \
          "  s[threadIdx.x] = cg::inclusive_scan(t, in[threadIdx.x], [](const int &a, const int &b) { return a + b; });\n}\n"
    a = np.random.default_rng(5).integers(-99, 99, 32).astype(np.int32)
    r, s = np.zeros(32, np.int32), np.zeros(32, np.int32)
    launch(src, "k", 32, a, r, s)
    assert np.array_equal(r, np.repeat(a.reshape(4, 8).max(1), 8))
    assert np.array_equal(s, np.cumsum(a.reshape(4, 8), axis=1).ravel())


@pytest.mark.parametrize("op,msg", [
    ("[](int a, int b) { int c = a + b; return c; }", "a lambda operator must take two values and be one return statement"),
    ("cg::plus<int>", "the operator must be cg::plus<T>()"),
])
def test_other_reduce_operators_are_diagnostics(op, msg):
    e = compile_error(CG + "__global__ void k(int *p) {\n  auto t = cg::tiled_partition<32>(cg::this_thread_block());\n"
                      f"  p[0] = cg::reduce(t, p[0], {op});\n}}\n")
    assert msg in e.message and e.line == 5


def test_lambda_elsewhere_is_named_unsupported():
    e = compile_error("__global__ void k(int *p) {\n  auto f = [](int x) { return x + 1; };\n}\n")
    assert "lambdas are not supported" in e.message and (e.line, e.col) == (2, 12)


def test_grid_group_is_named_unsupported():
    e = compile_error(CG + "__global__ void k() {\n  cg::grid_group g = cg::this_grid();\n}\n")
    assert "grid" in e.message and e.line == 4


def test_block_sync_in_divergent_code_is_found_like_syncthreads():
    src = "__global__ void k(float *p)\n{\n  cg::thread_block b = cg::this_thread_block();\n" \
          "  if (b.thread_rank() < 16) {\n    p[b.thread_rank()] = 1.0f;\n    b.sync();\n  }\n}\n"
    result = launch(src, "k", 64, np.zeros(64, np.float32))
    f, = [f for f in result.findings if f.kind == "barrier_divergence"]
    assert f.line == 8 and f.thread == (16, 0, 0)
