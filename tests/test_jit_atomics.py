"""Every atomic on global and shared memory, against a lane-order reference."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_launch import launch

N = 96  # three warps, all hitting 4 addresses

GLOBAL = r"""
extern "C" __global__ void k(T* data, const T* vals, T* old) {
    int t = threadIdx.x;
    old[t] = CALL;
}
"""

SHARED = r"""
extern "C" __global__ void k(T* data, const T* vals, T* old) {
    __shared__ T s[4];
    int t = threadIdx.x;
    if (t < 4) s[t] = data[t];
    __syncthreads();
    old[t] = CALL_S;
    __syncthreads();
    if (t < 4) data[t] = s[t];
}
"""

OPS = {
    "atomicAdd": lambda o, v: o + v, "atomicSub": lambda o, v: o - v,
    "atomicExch": lambda o, v: v, "atomicMin": min, "atomicMax": max,
    "atomicAnd": lambda o, v: o & v, "atomicOr": lambda o, v: o | v,
    "atomicXor": lambda o, v: o ^ v,
}


def _reference(op, dtype, data, vals):
    """Warps in order, lanes in order (the emulator's documented order)."""
    d = data.copy()
    old = np.zeros(N, dtype)
    for t in range(N):
        a = t % 4
        old[t] = d[a]
        with np.errstate(over="ignore"):
            d[a] = dtype(op(d[a], vals[t]))
    return d, old


def _run(template, call, ctype, dtype, data, vals):
    src = template.replace("T", ctype).replace("CALL_S", call.replace("PTR", "&s[t % 4]")) \
        .replace("CALL", call.replace("PTR", "&data[t % 4]"))
    data = data.copy()
    old = np.zeros(N, dtype)
    launch(src, "k", 1, N, data, vals, old)
    return data, old


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("name", list(OPS))
def test_integer_atomics_apply_in_lane_order(space, name):
    dtype = np.int32
    data = np.array([5, -3, 100, 0], dtype)
    vals = ((np.arange(N) * 37) % 23 - 11).astype(dtype)
    d, old = _run(GLOBAL if space == "global" else SHARED, f"{name}(PTR, vals[t])", "int", dtype,
                  data, vals)
    rd, rold = _reference(OPS[name], dtype, data, vals)
    np.testing.assert_array_equal(d, rd)
    np.testing.assert_array_equal(old, rold)


@pytest.mark.parametrize("space", ["global", "shared"])
def test_float_atomic_add(space):
    data = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
    vals = (np.arange(N) * 0.25).astype(np.float32)
    d, old = _run(GLOBAL if space == "global" else SHARED, "atomicAdd(PTR, vals[t])", "float",
                  np.float32, data, vals)
    rd, rold = _reference(lambda o, v: o + v, np.float32, data, vals)
    np.testing.assert_array_equal(d, rd)
    np.testing.assert_array_equal(old, rold)


@pytest.mark.parametrize("space", ["global", "shared"])
def test_unsigned_atomic_inc_and_dec_wrap_at_the_limit(space):
    data = np.array([0, 3, 7, 1], np.uint32)
    vals = np.full(N, 5, np.uint32)
    tpl = GLOBAL if space == "global" else SHARED
    d, old = _run(tpl, "atomicInc(PTR, vals[t])", "unsigned int", np.uint32, data, vals)
    rd, rold = _reference(lambda o, v: 0 if o >= v else o + 1, np.uint32, data, vals)
    np.testing.assert_array_equal(d, rd)
    np.testing.assert_array_equal(old, rold)
    d, old = _run(tpl, "atomicDec(PTR, vals[t])", "unsigned int", np.uint32, data, vals)
    rd, rold = _reference(lambda o, v: v if (o == 0 or o > v) else o - 1, np.uint32, data, vals)
    np.testing.assert_array_equal(d, rd)
    np.testing.assert_array_equal(old, rold)


@pytest.mark.parametrize("space", ["global", "shared"])
def test_atomic_cas_swaps_only_on_match(space):
    data = np.array([0, 0, 0, 0], np.int32)
    vals = np.arange(N, dtype=np.int32)
    # each thread tries to replace (t//4) with t//4 + 1: a chain per address
    tpl = GLOBAL if space == "global" else SHARED
    d, old = _run(tpl, "atomicCAS(PTR, t / 4, t / 4 + 1)", "int", np.int32, data, vals)
    np.testing.assert_array_equal(d, [N // 4] * 4)
    np.testing.assert_array_equal(old, np.arange(N) // 4)


def test_unsigned_long_long_atomic_add_and_max():
    src = r"""
    extern "C" __global__ void k(unsigned long long* d) {
        atomicAdd(&d[0], 1ull << 40);
        atomicMax(&d[1], (unsigned long long)threadIdx.x << 33);
    }"""
    d = np.zeros(2, np.uint64)
    launch(src, "k", 1, 64, d)
    assert d[0] == 64 << 40
    assert d[1] == 63 << 33


def test_atomic_whose_result_is_unused_counts_as_reduction():
    src = r"""
    extern "C" __global__ void k(int* d, int* o) {
        atomicAdd(d, 1);
        o[threadIdx.x] = atomicAdd(d + 1, 1);
    }"""
    d = np.zeros(2, np.int32)
    o = np.zeros(32, np.int32)
    la = launch(src, "k", 1, 32, d, o)
    assert la.stats["global_reduction_requests"] == 1
    assert la.stats["global_atomic_requests"] == 1
