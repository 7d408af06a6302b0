"""The checker's findings name what they touch: the shared array, local
array, kernel argument or __device__ variable, and the byte in it."""
from __future__ import annotations

import numpy as np

import gpuemu
from kernel_launch import launch


def test_a_shared_race_names_the_array_and_the_byte():
    src = r"""
    extern "C" __global__ void k(int* o) {
        __shared__ int a[64];
        __shared__ int b[64];
        b[threadIdx.x] = threadIdx.x;
        o[threadIdx.x] = b[63 - threadIdx.x];
    }"""
    f = launch(src, "k", 1, 64, np.zeros(64, np.int32), check=["race"]).findings[0]
    # b starts at byte 256; warp 0's last lane reads b[32], warp 1's first lane writes it
    assert f.extra["object"] == "the shared array 'b' [256, 512)"
    assert f.extra["offset"] == f.address - 256 and 0 <= f.extra["offset"] < 256
    assert f"(byte {f.extra['offset']} of the shared array 'b' [256, 512))" in f.message


def test_a_global_race_names_the_kernel_argument_and_the_byte_from_where_it_points():
    src = r"""
    extern "C" __global__ void k(const int* in, int* out) {
        if (threadIdx.x == 0) out[3] = out[3] + in[blockIdx.x];
    }"""
    whole = gpuemu.zeros(64, np.int32)
    la = launch(src, "k", 2, 32, gpuemu.zeros(2, np.int32), whole[8:], check=["race"])
    assert {(f.extra["object"], f.extra["offset"]) for f in la.findings} == {("argument 'out'", 12)}
    assert "(byte 12 of argument 'out')" in la.findings[0].message


def test_a_global_race_on_a_device_variable_names_it():
    src = r"""
    __device__ int total[4];
    extern "C" __global__ void k(int* out) {
        if (threadIdx.x == 0) total[2] = total[2] + blockIdx.x;
    }"""
    la = launch(src, "k", 2, 32, np.zeros(1, np.int32), check=["race"])
    assert {(f.extra["object"], f.extra["offset"]) for f in la.findings} == {("__device__ total", 8)}


def test_an_uninitialised_global_read_names_the_argument():
    src = r"""
    extern "C" __global__ void k(const float* a, float* out) {
        out[threadIdx.x] = a[threadIdx.x] + 1.0f;
    }"""
    [f] = launch(src, "k", 1, 32, gpuemu.empty(32, np.float32), gpuemu.zeros(32, np.float32),
                 check=["initcheck"]).findings
    assert (f.extra["object"], f.extra["offset"]) == ("argument 'a'", 0)


def test_a_race_between_blocks_advises_message_passing_not_a_barrier():
    src = r"""
    extern "C" __global__ void k(int* out) {
        if (threadIdx.x == 0) out[0] = out[0] + blockIdx.x;
    }"""
    la = launch(src, "k", 2, 32, gpuemu.zeros(1, np.int32), check=["race"])
    f = next(f for f in la.findings if f.extra["other_block"] != f.block)
    assert "(different blocks); blocks are ordered only by a __threadfence() then an atomic" in f.message
    assert "__syncthreads" not in f.message


def test_a_race_between_warps_of_a_block_advises_a_barrier():
    src = r"""
    extern "C" __global__ void k(int* o) {
        __shared__ int s[64];
        s[threadIdx.x] = threadIdx.x;
        o[threadIdx.x] = s[63 - threadIdx.x];
    }"""
    f = launch(src, "k", 1, 64, np.zeros(64, np.int32), check=["race"]).findings[0]
    assert "(one barrier interval); add a __syncthreads() between them, or a __threadfence_block()" in f.message


def test_a_block_that_waits_on_a_flag_another_block_sets_with_no_release_before_it_checks_clean():
    # block 1 fences then sets the flag (nothing of its own to release);
    # block 0 spins on it, then reads it: acquiring reads with no released
    # access anywhere in the launch (this raised IndexError in checker._member)
    src = r"""
    extern "C" __global__ void k(volatile int* flag, int* o) {
        if (blockIdx.x == 0) {
            if (threadIdx.x == 0) { while (flag[0] == 0) { } }
            __syncthreads();
            o[threadIdx.x] = flag[0];
        } else if (threadIdx.x == 0) {
            __threadfence();
            flag[0] = 7;
        }
    }"""
    o = gpuemu.zeros(64, np.int32)
    la = launch(src, "k", 2, 64, gpuemu.zeros(1, np.int32), o, check=True)
    assert la.findings == []
    assert (o.get() == 7).all()


def test_global_accesses_that_are_all_strong_are_not_judged_pair_by_pair(monkeypatch):
    # two strong accesses never race: a spin on an atomic lock that never opens
    # (millions of atomic and volatile records) reaches its watchdog unjudged
    from gpuemu.check import racecheck
    judged = []
    find = racecheck.find_races
    monkeypatch.setattr(racecheck, "find_races", lambda rows, *a, **kw: judged.append(len(rows)) or find(rows, *a, **kw))
    src = r"""
    extern "C" __global__ void k(int* lock, volatile int* seen) {
        while (atomicCAS(lock, 0, 1) != 0) { seen[0] = 1; }
    }"""
    try:
        launch(src, "k", 1, 32, np.ones(1, np.int32), np.zeros(1, np.int32), check=["race"], budget=100000)
    except gpuemu.KernelError as e:
        assert [f.kind for f in e.findings] == ["deadlock"]
    else:
        raise AssertionError("the lock never opens")
    assert judged == []
