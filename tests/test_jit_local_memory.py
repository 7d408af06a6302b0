"""Per-thread local arrays and structs, indexed at run time."""
from __future__ import annotations

import numpy as np

from kernel_launch import launch


def test_local_array_indexed_at_run_time_is_private_per_thread():
    src = r"""
    extern "C" __global__ void k(const int* idx, int* out) {
        int t = blockIdx.x * blockDim.x + threadIdx.x;
        int a[16];
        for (int i = 0; i < 16; i++) a[i] = t * 100 + i;
        a[idx[t]] += 1000;
        out[t] = a[idx[t]] + a[(idx[t] + 1) % 16];
    }"""
    idx = (np.arange(64, dtype=np.int32) * 7) % 16
    out = np.zeros(64, np.int32)
    launch(src, "k", 2, 32, idx, out)
    t = np.arange(64)
    np.testing.assert_array_equal(out, (t * 100 + idx + 1000) + (t * 100 + (idx + 1) % 16))


def test_local_accesses_are_traced_as_local_requests():
    src = r"""
    extern "C" __global__ void k(const int* idx, int* out) {
        int a[8];
        int t = threadIdx.x;
        a[idx[t]] = t;
        out[t] = a[idx[t]];
    }"""
    idx = np.arange(32, dtype=np.int32) % 8
    out = np.zeros(32, np.int32)
    la = launch(src, "k", 1, 32, idx, out)
    np.testing.assert_array_equal(out, np.arange(32))
    assert la.stats["local_store_requests"] == 1
    assert la.stats["local_load_requests"] == 1


def test_struct_in_local_memory_keeps_its_fields():
    src = r"""
    struct P { int a; float b; double c; };
    extern "C" __global__ void k(double* out) {
        int t = threadIdx.x;
        P p;
        p.a = t; p.b = 0.5f * t; p.c = 2.0 * t;
        P q = p;
        out[t] = q.a + q.b + q.c;
    }"""
    out = np.zeros(32, np.float64)
    launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, np.arange(32) * 3.5)


def test_linked_structs_in_local_memory_follow_next_pointers():
    src = r"""
    struct Node { int v; struct Node *next; };
    __global__ void k(int *out) {
        struct Node a, b;
        a.v = threadIdx.x; b.v = 100; a.next = &b; b.next = 0;
        int s = 0;
        for (struct Node *p = &a; p; p = p->next) s += p->v;
        out[threadIdx.x] = s;
    }"""
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, np.arange(32) + 100)
