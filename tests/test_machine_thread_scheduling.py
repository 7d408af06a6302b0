"""Independent thread scheduling: an intra-warp spin lock deadlocks before
sm_70 (SIMT stack) and completes from sm_70 on (warp fragments)."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.jit import abi
from gpuemu.machine.thread_scheduling import split_warp

SPIN_LOCK = r"""
extern "C" __global__ void k(int* lock, int* counter) {
    while (atomicCAS(lock, 0, 1) != 0) { }
    counter[0] = counter[0] + 1;
    __threadfence();
    atomicExch(lock, 0);
}"""


def run(arch: str, threads: int, **opts):
    mod = gpuemu.RawModule(code=SPIN_LOCK, arch=arch)
    counter = np.zeros(1, np.int32)
    la = mod.get_function("k")(1, threads, (np.zeros(1, np.int32), counter), stats=False, **opts)
    return counter[0], la


@pytest.mark.parametrize("arch", ["sm_70", "sm_90"])
def test_intra_warp_spin_lock_completes_with_independent_thread_scheduling(arch):
    count, la = run(arch, 64, check=True)
    assert count == 64 and la.findings == []


@pytest.mark.parametrize("arch", ["sm_60", "sm_52"])
def test_intra_warp_spin_lock_deadlocks_with_a_simt_stack(arch):
    with pytest.raises(gpuemu.KernelError) as ei:
        run(arch, 32, budget=20000)
    [f] = ei.value.findings
    assert (f.kind, f.line) == ("deadlock", 3)
    assert f.extra["parked_lanes"] == 1 and f.extra["spinning_lanes"] == 0xFFFFFFFE


def test_split_gives_the_fragment_the_parked_lanes_and_its_resume_point():
    frame = np.zeros(1024, np.uint8)
    row = frame.view(np.int32)
    row[abi.F_VALID // 4] = -1
    row[abi.F_SPLIT_MASK // 4] = 0x0000000F
    row[abi.F_SPLIT_RESUME // 4] = 7
    row[abi.F_RESUME // 4] = 3
    frame[600] = 42
    frag = split_warp(row, 1024)
    f32 = frag.view(np.int32)
    assert f32[abi.F_VALID // 4] == 0xF and f32[abi.F_RESUME // 4] == 7 and frag[600] == 42
    assert np.uint32(row[abi.F_VALID // 4]) == 0xFFFFFFF0 and row[abi.F_RESUME // 4] == 3
    assert frag.ctypes.data % 64 == 0


def test_a_loop_with_short_divergent_trip_counts_stays_one_warp():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int v = 0;
        for (int i = 0; i < (int)threadIdx.x; i++) v += i;
        out[threadIdx.x] = __shfl_xor_sync(0xffffffff, v, 1);
    }"""
    out = np.zeros(32, np.int32)
    la = gpuemu.RawModule(code=src).get_function("k")(1, 32, (out,), check=True)
    tri = np.arange(32) * (np.arange(32) - 1) // 2
    np.testing.assert_array_equal(out, tri[np.arange(32) ^ 1])
    assert la.findings == []
