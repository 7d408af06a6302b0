"""Device functions called inside expressions, with barriers and side effects."""
from __future__ import annotations

import numpy as np

from kernel_launch import launch


def test_block_reduction_in_a_device_function_called_inside_an_expression():
    src = r"""
    __device__ int block_sum(int v, int* s) {
        int t = threadIdx.x;
        s[t] = v;
        __syncthreads();
        for (int o = blockDim.x / 2; o > 0; o >>= 1) {
            if (t < o) s[t] += s[t + o];
            __syncthreads();
        }
        int r = s[0];
        __syncthreads();
        return r;
    }
    extern "C" __global__ void k(const int* in, int* out) {
        __shared__ int s[128];
        int t = threadIdx.x;
        out[t] = 1000 * (block_sum(in[t], s) + 1) + block_sum(t, s);
    }"""
    vals = np.arange(128, dtype=np.int32) * 3
    out = np.zeros(128, np.int32)
    launch(src, "k", 1, 128, vals, out)
    assert (out == 1000 * (vals.sum() + 1) + np.arange(128).sum()).all()


def test_calls_keep_left_to_right_order_of_side_effects():
    src = r"""
    __device__ int bump(int* c, int by) { int old = *c; *c = old * 10 + by; return old; }
    extern "C" __global__ void k(int* c, int* out) {
        int t = threadIdx.x;
        out[t] = bump(&c[t], 1) + 100 * bump(&c[t], 2);
    }"""
    c = np.full(32, 5, np.int32)
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, c, out)
    assert (c == 512).all()
    assert (out == 5 + 100 * 51).all()


def test_call_in_short_circuit_right_side_runs_only_where_needed():
    src = r"""
    __device__ bool mark(int* hits, int t) { hits[t] += 1; return t % 2 == 0; }
    extern "C" __global__ void k(int* hits, int* out) {
        int t = threadIdx.x;
        out[t] = (t < 10 && mark(hits, t)) ? 1 : 0;
    }"""
    hits, out = np.zeros(32, np.int32), np.zeros(32, np.int32)
    launch(src, "k", 1, 32, hits, out)
    t = np.arange(32)
    np.testing.assert_array_equal(hits, (t < 10).astype(np.int32))
    np.testing.assert_array_equal(out, ((t < 10) & (t % 2 == 0)).astype(np.int32))


def test_call_in_a_loop_condition_is_evaluated_every_iteration():
    src = r"""
    __device__ int below(int i, int t) { return i < t % 5; }
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x, n = 0;
        for (int i = 0; below(i, t); i++) n += 2;
        out[t] = n;
    }"""
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, 2 * (np.arange(32) % 5))


def test_device_function_with_local_array_and_struct_parameter():
    src = r"""
    struct Pair { int a; int b; };
    __device__ int pick(Pair p, int i) {
        int tab[3];
        tab[0] = p.a; tab[1] = p.b; tab[2] = p.a * p.b;
        return tab[i % 3];
    }
    extern "C" __global__ void k(int* out, Pair p) {
        int t = threadIdx.x;
        out[t] = pick(p, t);
    }"""
    out = np.zeros(32, np.int32)
    pair = np.array([(6, 7)], dtype=[("a", "<i4"), ("b", "<i4")])[0]
    launch(src, "k", 1, 32, out, pair)
    np.testing.assert_array_equal(out, np.array([6, 7, 42] * 11)[:32])


def test_struct_copy_larger_than_the_trace_buffer_still_runs():
    src = r"""
    struct Big { float v[6000]; };
    extern "C" __global__ void k(const Big* in, Big* out) {
        out[0] = in[0];
    }"""
    a = np.arange(6000, dtype=np.float32)
    out = np.zeros(6000, np.float32)
    la = launch(src, "k", 1, 1, a, out)
    np.testing.assert_array_equal(out, a)
    assert la.stats["global_load_requests"] == 6000
