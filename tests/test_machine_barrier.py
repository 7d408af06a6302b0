"""__syncthreads across the warps of a block, and deadlock detection."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from kernel_launch import launch

TILED = r"""
#define TILE 32
extern "C" __global__ void transpose(float* out, const float* in, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8) {
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
        __syncthreads();
    }
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8)
        out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""


def test_tiled_transpose_with_barrier_inside_a_loop_matches_numpy():
    n = 128
    a = np.random.default_rng(3).random((n, n), dtype=np.float32)
    out = np.zeros_like(a)
    la = launch(TILED, "transpose", (n // 32, n // 32), (32, 8), out, a, np.int32(n))
    np.testing.assert_array_equal(out, a.T)
    assert la.stats["barriers"] == 4 * 8 * (n // 32) ** 2  # 4 per warp


def test_barrier_orders_shared_writes_before_reads_across_warps():
    src = r"""
    extern "C" __global__ void k(int* out) {
        __shared__ int s[256];
        int t = threadIdx.x;
        s[t] = t * t;
        __syncthreads();
        out[t] = s[255 - t];
    }"""
    out = np.zeros(256, np.int32)
    launch(src, "k", 1, 256, out)
    np.testing.assert_array_equal(out, (255 - np.arange(256)) ** 2)


def test_threads_that_exited_do_not_block_a_barrier():
    src = r"""
    extern "C" __global__ void k(int* out, int n) {
        __shared__ int s[128];
        int t = threadIdx.x;
        if (t >= n) return;
        s[t] = t;
        __syncthreads();
        out[t] = s[n - 1 - t];
    }"""
    out = np.zeros(128, np.int32)
    launch(src, "k", 1, 128, out, np.int32(70))
    want = np.zeros(128, np.int32)
    want[:70] = 69 - np.arange(70)
    np.testing.assert_array_equal(out, want)


def test_warps_waiting_at_different_barriers_are_barrier_divergence_naming_the_lines():
    # CUDA: undefined; the hardware barrier counts arriving warps, so both go on
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        if (t < 32) {
            __syncthreads();
            out[t] = 1;
        } else {
            out[t] = 2;
            __syncthreads();
        }
    }"""
    out = np.zeros(64, np.int32)
    la = launch(src, "k", 1, 64, out)
    np.testing.assert_array_equal(out, [1] * 32 + [2] * 32)
    [f] = la.findings
    assert f.kind == "barrier_divergence" and f.line == 5
    assert f.extra["barrier_lines"] == [5, 9]
    assert {w["warp"]: w["line"] for w in f.extra["waiting"]} == {0: 5, 1: 9}
    assert f.block == (0, 0, 0)


def test_warp_spinning_while_the_others_wait_at_a_barrier_is_a_deadlock_naming_who_exited():
    src = r"""
    extern "C" __global__ void k(volatile int* flag) {
        if (threadIdx.x >= 64) return;
        if (threadIdx.x < 32) {
            __syncthreads();
            flag[0] = 1;
        } else {
            while (flag[0] == 0) { }
        }
    }"""
    with pytest.raises(gpuemu.KernelError) as ei:
        launch(src, "k", 1, 96, np.zeros(1, np.int32), budget=20000, stats=False)
    f = ei.value.findings[0]
    assert f.kind == "deadlock" and f.line == 8
    assert f.extra["barrier_lines"] == [5] and f.extra["waiting"] == [{"warp": 0, "line": 5}]
    assert f.extra["exited_threads"] == [(x, 0, 0) for x in range(64, 96)]
    assert "32 threads have exited" in f.message


def test_barrier_inside_a_divergent_branch_is_reported_and_the_launch_goes_on():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        if (t < 16) {
            __syncthreads();
        }
        out[t] = t;
    }"""
    out = np.zeros(32, np.int32)
    la = launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, np.arange(32))
    assert [f.kind for f in la.findings] == ["barrier_divergence"]
    f = la.findings[0]
    assert f.line == 5 and f.thread == (16, 0, 0) and f.extra["active_mask"] == 0xFFFF


def test_barrier_after_early_exit_of_some_lanes_is_not_divergent():
    src = r"""
    extern "C" __global__ void k(int* out, int n) {
        int t = threadIdx.x;
        if (t >= n) return;
        __syncthreads();
        out[t] = t;
    }"""
    out = np.zeros(64, np.int32)
    la = launch(src, "k", 1, 64, out, np.int32(40))
    assert la.findings == []
