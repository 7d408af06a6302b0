"""Bad kernels stop with a KernelError finding; memory outside objects is never touched."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from kernel_launch import launch


def _fails(src, grid, block, *args, **kw):
    with pytest.raises(gpuemu.KernelError) as ei:
        launch(src, "k", grid, block, *args, **kw)
    assert len(ei.value.findings) == 1
    return ei.value.findings[0]


def test_global_read_past_the_end_names_kernel_block_thread_line_address():
    src = r"""
    extern "C" __global__ void k(const float* a, float* b) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        b[i % 64] = a[i];
    }"""
    a = np.arange(100, dtype=np.float32)
    x = gpuemu.asarray(a)
    b = np.zeros(64, np.float32)
    with pytest.raises(gpuemu.KernelError) as ei:
        gpuemu.RawModule(code=src).get_function("k")(2, 64, (x, b))
    f = ei.value.findings[0]
    assert f.kind == "out_of_bounds"
    assert f.kernel == "k" and f.line == 4 and f.space == "global"
    assert f.block == (1, 0, 0) and f.thread == (36, 0, 0)      # i = 100, first bad lane
    assert f.address == x.device_address + 400
    assert (b == 0).all()    # a failed launch copies nothing back


def test_global_write_past_the_end_leaves_the_neighbour_untouched():
    src = r"""
    extern "C" __global__ void k(int* a, int n) {
        a[threadIdx.x + n] = 7;
    }"""
    a = gpuemu.zeros(32, np.int32)
    neighbour = gpuemu.zeros(64, np.int32)
    f = _fails(src, 1, 32, a, np.int32(16))
    assert f.kind == "out_of_bounds" and f.thread == (16, 0, 0)
    assert (a.get() == 0).all() and (neighbour.get() == 0).all()


def test_shared_index_out_of_range_is_a_shared_finding():
    src = r"""
    extern "C" __global__ void k(int* out) {
        __shared__ int s[32];
        s[threadIdx.x] = 1;
        out[threadIdx.x] = s[threadIdx.x];
    }"""
    out = np.zeros(64, np.int32)
    f = _fails(src, 1, 64, out)
    assert f.kind == "out_of_bounds" and f.space == "shared"
    assert f.line == 4 and f.thread == (32, 0, 0) and f.address == 128
    assert "'s'" in f.message
    assert (out == 0).all()


def test_local_array_overrun_is_a_local_finding():
    src = r"""
    extern "C" __global__ void k(int* out, int n) {
        int a[4];
        for (int i = 0; i < n; i++) a[i] = i;
        out[threadIdx.x] = a[0];
    }"""
    out = np.zeros(32, np.int32)
    f = _fails(src, 1, 32, out, np.int32(5))
    assert f.kind == "out_of_bounds" and f.space == "local" and f.line == 4
    assert f.address == 16 and f.thread == (0, 0, 0)
    assert (out == 0).all()


def test_null_pointer_read_is_out_of_bounds():
    src = r"""
    extern "C" __global__ void k(int* p, int* out) { out[threadIdx.x] = p[threadIdx.x]; }"""
    f = _fails(src, 1, 32, None, np.zeros(32, np.int32))
    assert f.kind == "out_of_bounds" and f.address == 0


def test_misaligned_access_is_reported():
    src = r"""
    extern "C" __global__ void k(char* p) {
        int* q = (int*)(p + 1);
        q[threadIdx.x] = 1;
    }"""
    f = _fails(src, 1, 32, np.zeros(256, np.int8))
    assert f.kind == "misaligned_access" and f.thread == (0, 0, 0)


def test_infinite_loop_stops_with_a_timeout_at_the_loop_line():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int i = 0;
        while (out[0] == 0) { i++; }
        out[1] = i;
    }"""
    f = _fails(src, 1, 32, np.zeros(2, np.int32), budget=1000)
    assert f.kind == "timeout" and f.line == 4
    assert f.extra["budget"] == 1000
