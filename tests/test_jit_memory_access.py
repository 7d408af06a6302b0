"""Warp-wide checked memory requests: order, trace records, resumption."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import gpuemu
from gpuemu.jit import abi
from gpuemu.machine import executor
from kernel_launch import launch


def test_same_address_store_highest_active_lane_wins():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        if (t != 7 && t != 15) out[t / 8] = t;
    }"""
    out = np.zeros(4, np.int32)
    launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, [6, 14, 23, 31])


def test_every_request_is_traced_exactly_once_across_trace_drains():
    # 64 blocks x 4 warps x 100 loads = 25600 requests: several full trace buffers
    src = r"""
    extern "C" __global__ void k(const float* a, float* out) {
        float s = 0.0f;
        for (int i = 0; i < 100; i++) s += a[(threadIdx.x + i) % 128];
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    }"""
    a = np.arange(128, dtype=np.float32)
    out = np.zeros(64 * 128, np.float32)
    la = launch(src, "k", 64, 128, a, out)
    t = np.arange(128)
    want = np.array([sum(a[(tt + i) % 128] for i in range(100)) for tt in t], np.float32)
    np.testing.assert_allclose(out.reshape(64, 128), np.broadcast_to(want, (64, 128)), rtol=1e-6)
    assert la.stats["global_load_requests"] == 64 * 4 * 100
    assert la.stats["global_store_requests"] == 64 * 4


def test_inactive_lanes_make_no_request_and_empty_masks_none():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        if (t >= 64) out[t] = 1;     // warps 0 and 1 have no active lane
    }"""
    out = np.zeros(128, np.int32)
    la = launch(src, "k", 1, 128, out)
    assert la.stats["global_store_requests"] == 2
    assert la.stats["global_store_sectors"] == 8


def test_shared_request_addresses_are_offsets_in_the_block_shared_memory():
    # a 2-way conflict needs the second array at its real offset: b starts
    # at byte 128 (after a[32]), so b[2*t] hits banks 0,2,..,30 twice
    src = r"""
    extern "C" __global__ void k(float* out) {
        __shared__ float a[32];
        __shared__ float b[64];
        int t = threadIdx.x;
        a[t] = t; b[t] = t; b[t + 32] = t;
        __syncthreads();
        out[t] = a[t] + b[(2 * t) % 64];
    }"""
    out = np.zeros(32, np.float32)
    la = launch(src, "k", 1, 32, out)
    t = np.arange(32)
    np.testing.assert_array_equal(out, t + (2 * t) % 32)
    assert la.stats["shared_load_requests"] == 2
    assert la.stats["shared_load_wavefronts"] == 1 + 2


def test_one_warp_filling_the_trace_buffer_many_times_loses_no_request():
    src = r"""
    extern "C" __global__ void k(float* o, int n) {
        float a[64];
        for (int i = 0; i < n; i++) a[i % 64] = i * 0.5f;
        o[threadIdx.x] = a[threadIdx.x];
    }"""
    o = np.zeros(32, np.float32)
    la = launch(src, "k", 1, 32, o, np.int32(30000))   # 30000 stores, > 3 buffers
    assert la.stats["local_store_requests"] == 30000
    assert la.stats["global_store_requests"] == 1
    np.testing.assert_array_equal(o, (np.arange(32) + 29952) * 0.5)


def test_a_whole_warp_store_to_shared_words_leaves_each_words_highest_lane(monkeypatch):
    counts = _ctx_counts(monkeypatch)
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        out[t / 8] = t;             // every lane stores: one scatter, lanes in lane order
    }"""
    out = np.zeros(4, np.int32)
    launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, [7, 15, 23, 31])
    assert counts == [(0, 0)]       # not moved lane by lane


SAME_ADDRESS_STORE = r"""
__global__ void k(int *out) {
    __shared__ int s;
    s = threadIdx.x;            // every lane stores to one word
    __syncthreads();
    if (threadIdx.x == 0) out[0] = s;
}"""


def _winner(seed):
    out = np.zeros(1, np.int32)
    launch(SAME_ADDRESS_STORE, "k", 1, 32, out, seed=seed)
    return int(out[0])


def test_same_address_store_winner_is_seeded_random():
    winners = [_winner(s) for s in range(8)]
    assert len(set(winners)) > 1                       # not always the same lane
    assert winners == [_winner(s) for s in range(8)]   # same seed, same winner


def _ctx_counts(monkeypatch) -> list:
    """Per launch (loads and stores moved lane by lane, not as one whole-warp
    gather or scatter; requests checked lane by lane): ctx's C_LANE_MOVES and
    C_LANE_CHECKS, read when each run finishes."""
    seen = []
    finish = executor.LaunchRun.finish

    def keep(self, *args, **kwargs):
        seen.append((int(self.ctx[abi.C_LANE_MOVES]), int(self.ctx[abi.C_LANE_CHECKS])))
        return finish(self, *args, **kwargs)
    monkeypatch.setattr(executor.LaunchRun, "finish", keep)
    return seen


def test_whole_warp_and_partial_loads_of_4_and_8_byte_lanes_read_every_space(monkeypatch):
    # whole warps take one gather, partial masks the lane-by-lane path; inactive lanes keep their values
    src = r"""
    extern "C" __global__ void k(const int* gi, const float* gf, const double* gd, const long long* gl,
                                 long long* out) {
        __shared__ double sd[64];
        int t = threadIdx.x;
        double loc[2];
        sd[t] = gd[63 - t];
        loc[t % 2] = gf[t];
        loc[1 - t % 2] = 0.5;
        __syncthreads();
        long long v = gi[t] + gl[t] + (long long)(4.0 * sd[t]) + (long long)(2.0 * loc[t % 2]);
        long long w = -1;
        if (t % 3 != 0) w = gl[63 - t] + gi[63 - t] + (long long)sd[63 - t];
        out[t] = v;
        out[64 + t] = w;
    }"""
    t = np.arange(64)
    gi, gf = (t * 7).astype(np.int32), (t * 3).astype(np.float32)
    gd, gl = (t * 5).astype(np.float64), (t << 35).astype(np.int64)
    r = 63 - t
    counts = _ctx_counts(monkeypatch)
    for stats in (True, False):
        out = np.zeros(128, np.int64)
        launch(src, "k", 1, 64, gi, gf, gd, gl, out, stats=stats)
        np.testing.assert_array_equal(out[:64], gi + gl + 4 * gd[::-1].astype(np.int64) + 2 * gf.astype(np.int64))
        np.testing.assert_array_equal(out[64:], np.where(t % 3 != 0, gl[r] + gi[r] + gd[::-1][r].astype(np.int64),
                                                         -1))
    # per warp (2) the whole-warp loads gd, gf, gi, gl, sd[t], loc[t % 2] and stores sd, loc twice, out
    # twice move as one; the three loads under t % 3 lane by lane; every request passes the vector
    # checks, whole or partial
    assert counts == [(2 * 3, 0), (2 * 3, 0)]


def test_a_whole_warp_load_with_a_lane_in_another_array_reads_each_lanes_own(monkeypatch):
    counts = _ctx_counts(monkeypatch)
    src = r"""
    extern "C" __global__ void k(const float* a, const float* b, float* out) {
        int t = threadIdx.x;
        const float* p = (t == 5 || t == 30) ? b : a;     // every lane loads: two objects in one request
        out[t] = p[t];
    }"""
    a, b = np.arange(32, dtype=np.float32), -np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    launch(src, "k", 1, 32, a, b, out)
    np.testing.assert_array_equal(out, np.where(np.isin(np.arange(32), [5, 30]), b, a))
    assert counts == [(0, 1)]       # the load checked lane by lane (two objects); a gather, a scatter


def test_a_whole_warp_load_with_one_misaligned_lane_faults_at_that_lane():
    src = r"""
    extern "C" __global__ void k(const char* p, int* out) {
        int t = threadIdx.x;
        out[t] = *(const int*)(p + 4 * t + (t == 9 ? 2 : 0));
    }"""
    with pytest.raises(gpuemu.KernelError) as ei:
        launch(src, "k", 1, 32, np.zeros(256, np.int8), np.zeros(32, np.int32))
    f = ei.value.findings[0]
    assert f.kind == "misaligned_access" and f.thread == (9, 0, 0)


def test_a_whole_warp_load_one_lane_past_the_end_faults_at_that_lane():
    src = r"""
    extern "C" __global__ void k(const float* a, float* out) {
        int t = threadIdx.x;
        out[t] = a[t + (t == 17 ? 40 : 0)];
    }"""
    with pytest.raises(gpuemu.KernelError) as ei:
        launch(src, "k", 1, 32, np.zeros(40, np.float32), np.zeros(32, np.float32))
    f = ei.value.findings[0]
    assert f.kind == "out_of_bounds" and f.thread == (17, 0, 0) and f.space == "global"


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="an x86 CPU without AVX")
def test_whole_warp_loads_compile_and_run_for_an_x86_cpu_without_avx(tmp_path):
    # the 32-byte register hand-over of the whole-warp load needs AVX's ymm
    # registers; built for a CPU without them, the kernel must still run
    script = r"""
import llvmlite.binding as llvm
class Features:
    def flatten(self):
        return "+sse2,+sse4.2,-avx,-avx2,-avx512f,-fma"
llvm.get_host_cpu_name = lambda: "x86-64"
llvm.get_host_cpu_features = lambda: Features()
import numpy as np, gpuemu
from gpuemu.jit import engine
assert not engine.has_feature("avx")
k = gpuemu.RawModule(code='''
extern "C" __global__ void k(float* out, const double* x) { out[threadIdx.x] = (float)x[threadIdx.x] * 2.f; }
''').get_function("k")
out, x = gpuemu.zeros(32, dtype=np.float32), gpuemu.asarray(np.arange(32.0))
k((1,), (32,), (out, x), stats=False)
print(out.get().tolist() == [2.0 * i for i in range(32)])
"""
    env = dict(os.environ, GPUEMU_CACHE_DIR=str(tmp_path))
    got = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.strip() == "True"


def test_volatile_loads_and_stores_are_marked_in_the_kernel_meta():
    # check mode's racecheck takes them for strong (relaxed, sys-scope) accesses
    src = r"""
    extern "C" __global__ void k(volatile int* flag, int* data) {
        while (flag[0] == 0) { }
        data[0] = 1;
        flag[1] = data[1];
    }"""
    meta = gpuemu.RawModule(code=src).get_function("k").meta
    got = sorted((i.line, i.op, i.volatile) for i in meta.instrs)
    assert got == [(3, "ld", True), (4, "st", False), (5, "ld", False), (5, "st", True)]
