"""The native block loop does what the Python loop (executor._run_block) does."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.jit import abi
from gpuemu.machine import block_runner
from gpuemu.machine.warp_scheduler import LooseRoundRobin
from kernel_launch import launch


class PythonLoop(LooseRoundRobin):
    """The same policy; not the default class, so the launch uses the Python loop."""


def both(src, kernel, grid, block, make_args, **kw):
    """(native launch or error, Python launch or error, their argument arrays)."""
    out = []
    for sched in (None, PythonLoop()):
        args = make_args()
        try:
            res = launch(src, kernel, grid, block, *args, scheduler=sched, **kw)
        except gpuemu.KernelError as e:
            res = e
        out.append((res, args))
    return out


def findings(res):
    fs = res.findings
    return [(f.kind, f.line, f.block, f.thread, f.message.split(" at ")[0]) for f in fs]


def test_the_python_loop_is_used_for_another_scheduler():
    assert not block_runner.usable(type("R", (), {"scheduler": PythonLoop(), "options": {}})())


BARRIERS = r"""
extern "C" __global__ void k(const float* x, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    if (t >= n) return;
    s[t] = x[blockIdx.x * blockDim.x + t];
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (t < stride && t + stride < n) s[t] += s[t + stride];
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"""


def test_barrier_rounds_give_the_same_results_and_counters():
    x = np.random.default_rng(1).random(64 * 256, dtype=np.float32)
    (nat, a1), (py, a2) = both(BARRIERS, "k", (64,), (256,),
                               lambda: (x, np.zeros(64, np.float32), np.int32(200)))
    assert np.array_equal(a1[1], a2[1])
    assert nat.stats == py.stats and nat.stats_by_line == py.stats_by_line


def test_a_full_trace_buffer_is_drained_the_same_way():
    # 8 warps x 64 iterations of 2 shared requests: many trace drains per block
    src = r"""
    extern "C" __global__ void k(float* out) {
        __shared__ float s[256];
        float a = 0;
        for (int i = 0; i < 64; i++) { s[threadIdx.x] = a + i; a += s[(threadIdx.x * 7) % 256]; }
        out[blockIdx.x * 256 + threadIdx.x] = a;
    }"""
    (nat, a1), (py, a2) = both(src, "k", (40,), (256,), lambda: (np.zeros(40 * 256, np.float32),))
    assert np.array_equal(a1[0], a2[0])
    assert nat.stats == py.stats and nat.stats["shared_load_requests"] == 40 * 8 * 64


def test_warps_at_different_barriers_give_the_same_finding_and_results():
    src = r"""
    extern "C" __global__ void k(int* out) {
        if (threadIdx.x < 32) { __syncthreads(); out[threadIdx.x] = 1; }
        else { out[threadIdx.x] = 2; __syncthreads(); }
    }"""
    (nat, a1), (py, a2) = both(src, "k", (3,), (64,), lambda: (np.zeros(64, np.int32),))
    assert not isinstance(nat, gpuemu.KernelError) and findings(nat) == findings(py)
    assert nat.findings and np.array_equal(a1[0], a2[0])


def test_long_loops_that_yield_give_the_same_results_and_counters():
    src = r"""
    extern "C" __global__ void k(float* out) {
        __shared__ float s[64];
        float a = 0;
        for (int i = 0; i < 5000; i++) a += (i % 7) * 0.5f;
        s[threadIdx.x] = a;
        __syncthreads();
        out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x];
    }"""
    (nat, a1), (py, a2) = both(src, "k", (4,), (64,), lambda: (np.zeros(256, np.float32),))
    assert np.array_equal(a1[0], a2[0]) and nat.stats == py.stats


def test_a_warp_that_splits_gives_the_same_results_and_counters():
    # lanes spin until lane 1, parked after the loop, sets the flag: only
    # independent thread scheduling (sm_70+, the default) lets them finish
    src = r"""
    extern "C" __global__ void k(volatile int* flag, int* out) {
        int t = threadIdx.x;
        while (t != 1 && flag[blockIdx.x] == 0) { }
        if (t == 1) flag[blockIdx.x] = 1;
        out[blockIdx.x * 32 + t] = 7;
    }"""
    (nat, a1), (py, a2) = both(src, "k", (3,), (32,),
                               lambda: (np.zeros(3, np.int32), np.zeros(96, np.int32)),
                               budget=100000)
    assert not isinstance(nat, gpuemu.KernelError), nat
    assert a1[1].tolist() == a2[1].tolist() == [7] * 96
    assert nat.stats == py.stats


DIVERGENT_BARRIER = r"""
extern "C" __global__ void k(int* out) {
    if (threadIdx.x % 64 < 16) { __syncthreads(); }
    out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x;
}"""


# counters on and off: ranges of blocks per native call (block_runner.run_range)
@pytest.mark.parametrize("blocks,stats", [(4, True), (70, False)])
def test_barrier_divergence_is_the_same_finding_and_the_launch_goes_on(blocks, stats):
    (nat, a1), (py, a2) = both(DIVERGENT_BARRIER, "k", (blocks,), (128,),
                               lambda: (np.zeros(blocks * 128, np.int32),), stats=stats)
    assert np.array_equal(a1[0], a2[0])
    assert findings(nat) == findings(py) and nat.findings[0].kind == "barrier_divergence"


@pytest.mark.parametrize("kind,src", [
    ("out_of_bounds", r"""extern "C" __global__ void k(int* out) {
        out[blockIdx.x * 1000 + threadIdx.x] = 1; }"""),
    ("timeout", r"""extern "C" __global__ void k(int* out) {
        if (blockIdx.x == 2) while (out[1023] == 0) { }
        out[threadIdx.x] = 1; }"""),
])
def test_faults_and_timeouts_are_the_same_finding(kind, src):
    (nat, _), (py, _) = both(src, "k", (4,), (64,), lambda: (np.zeros(1024, np.int32),),
                             budget=1000)
    assert isinstance(nat, gpuemu.KernelError) and findings(nat) == findings(py)
    assert nat.findings[0].kind == kind


# ---- ranges of blocks per native call (block_runner.run_range)

def test_ranges_of_blocks_per_call_except_in_check_mode_and_the_weak_memory_model():
    run = type("R", (), {"scheduler": LooseRoundRobin(), "options": {}, "checker": None})()
    run._weak_mode = lambda: False
    assert block_runner.range_usable(run)
    run.checker = object()
    assert not block_runner.range_usable(run)
    run.checker, run._weak_mode = None, lambda: True
    assert not block_runner.range_usable(run)


GRID_3D = r"""
extern "C" __global__ void k(int* out) {
    __shared__ int s[64];
    int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int t = threadIdx.x;
    int before = s[t];                 // each block starts with zeroed shared memory
    __syncthreads();
    s[t] = b + 1;
    out[b * 64 + t] = before * 1000000 + blockIdx.x * 10000 + blockIdx.y * 100 + blockIdx.z;
}"""


@pytest.mark.parametrize("stats", [True, False])
def test_a_3d_grid_gives_each_block_its_index_and_fresh_shared_memory(stats):
    grid = (5, 3, 4)
    (nat, a1), (py, a2) = both(GRID_3D, "k", grid, (64,), lambda: (np.zeros(60 * 64, np.int32),),
                               stats=stats)
    z, y, x = np.meshgrid(range(4), range(3), range(5), indexing="ij")
    want = np.repeat((x * 10000 + y * 100 + z).ravel(), 64)
    assert a1[0].tolist() == a2[0].tolist() == want.tolist()
    if stats:
        assert nat.stats == py.stats and nat.stats_by_line == py.stats_by_line


def test_ranges_give_the_same_results_as_the_python_loop():
    x = np.random.default_rng(2).random(300 * 256, dtype=np.float32)
    (nat, a1), (py, a2) = both(BARRIERS, "k", (300,), (256,),
                               lambda: (x, np.zeros(300, np.float32), np.int32(200)), stats=False)
    assert np.array_equal(a1[1], a2[1])
    assert np.allclose(a1[1], x.reshape(300, 256)[:, :200].sum(axis=1), rtol=1e-4)


def test_a_block_that_splits_mid_range_is_finished_and_the_range_goes_on():
    src = r"""
    extern "C" __global__ void k(volatile int* flag, int* out) {
        int t = threadIdx.x;
        if (blockIdx.x % 5 == 2) {
            while (t != 1 && flag[blockIdx.x] == 0) { }
            if (t == 1) flag[blockIdx.x] = 1;
        }
        out[blockIdx.x * 32 + t] = blockIdx.x;
    }"""
    (nat, a1), (py, a2) = both(src, "k", (90,), (32,),
                               lambda: (np.zeros(90, np.int32), np.zeros(90 * 32, np.int32)),
                               budget=100000, stats=False)
    assert not isinstance(nat, gpuemu.KernelError), nat
    assert a1[1].tolist() == a2[1].tolist() == np.repeat(np.arange(90), 32).tolist()


def test_a_fault_in_a_range_is_the_same_finding():
    src = r"""extern "C" __global__ void k(int* out) {
        out[(blockIdx.x == 41 ? 5000 : blockIdx.x) * 64 + threadIdx.x] = 1; }"""
    (nat, _), (py, _) = both(src, "k", (100,), (64,), lambda: (np.zeros(6400, np.int32),),
                             stats=False)
    assert isinstance(nat, gpuemu.KernelError) and findings(nat) == findings(py)
    assert nat.findings[0].kind == "out_of_bounds" and nat.findings[0].block == (41, 0, 0)


THREAD_INDEX = r"""
extern "C" __global__ void k(int* out) {
    int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int b = blockIdx.x * blockDim.x * blockDim.y * blockDim.z;
    out[b + t] = threadIdx.x * 10000 + threadIdx.y * 100 + threadIdx.z;
}"""


@pytest.mark.parametrize("block", [(64,), (8, 4, 3)])
def test_a_range_gives_each_thread_its_indices_whatever_its_slot_held(block):
    # the range loop copies a warp's header from the template all but threadIdx,
    # which the warp function writes at its start: a slot's old bytes there are unread
    k = gpuemu.RawModule(code=THREAD_INDEX).get_function("k")
    n = 6 * int(np.prod(block))
    out = gpuemu.asarray(np.zeros(n, np.int32))
    k((6,), block, (out,), stats=False)
    [got] = k._kept_launches.values()
    [run] = got.idle
    tid = slice(abi.F_TID, abi.F_CUR)
    run.frames[:, tid] = 0xAB
    run.header_template[:, tid] = 0xCD
    out.set(np.zeros(n, np.int32))
    k((6,), block, (out,), stats=False)
    z, y, x = np.meshgrid(*(range(d) for d in reversed(block + (1, 1)[:3 - len(block)])),
                          indexing="ij")
    want = np.tile((x * 10000 + y * 100 + z).ravel(), 6)
    assert out.get().tolist() == want.tolist()
