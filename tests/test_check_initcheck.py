"""initcheck: a read of a location before any write to it, by emulation order."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.check.accesses import Rows
from gpuemu.check.initcheck import uninitialized, uninitialized_reference
from kernel_launch import launch


def rows_of(seq, unit, write, read) -> Rows:
    n = len(seq)
    z = np.zeros(n, np.int64)
    return Rows(seq=np.array(seq), block=z, warp=z, lane=z, epoch=z, wsync=z, unit=np.array(unit),
                line=np.arange(n) + 1, write=np.array(write), read=np.array(read),
                atomic=np.zeros(n, bool))


def test_read_before_the_first_write_is_uninitialised():
    r = rows_of([0, 1, 2], [5, 5, 5], [False, True, False], [True, False, True])
    assert uninitialized_reference(r, (r.unit,)).tolist() == [0]


def test_an_atomic_on_an_unwritten_location_reads_it_first():
    r = rows_of([0], [3], [True], [True])
    assert uninitialized_reference(r, (r.unit,)).tolist() == [0]


def test_bytes_written_before_the_batch_are_initialised():
    r = rows_of([0], [3], [False], [True])
    assert uninitialized_reference(r, (r.unit,), np.array([True])).tolist() == []


@pytest.mark.parametrize("seed", range(6))
def test_fast_path_agrees_with_the_reference(seed):
    rng = np.random.default_rng(seed)
    n = 80
    r = rows_of(np.sort(rng.integers(0, 40, n)), rng.integers(0, 8, n), rng.random(n) < 0.4,
                rng.random(n) < 0.7)
    before = rng.random(n) < 0.2
    want = uninitialized_reference(r, (r.unit,), before)
    assert len(want)
    np.testing.assert_array_equal(uninitialized(r, (r.unit,), before), want)


READ_PLUS_ONE = r"""
extern "C" __global__ void k(const float* a, float* out) {
    int t = threadIdx.x;
    out[t] = a[t] + 1.0f;
}"""


def test_fresh_global_buffer_read_is_reported_and_a_written_one_is_not():
    fresh = gpuemu.empty(32, np.float32)
    la = launch(READ_PLUS_ONE, "k", 1, 32, fresh, gpuemu.empty(32, np.float32), check=["initcheck"])
    [f] = la.findings
    assert (f.kind, f.line, f.space) == ("uninitialized_read", 4, "global")
    fresh.set(np.ones(32, np.float32))
    la = launch(READ_PLUS_ONE, "k", 1, 32, fresh, gpuemu.empty(32, np.float32), check=["initcheck"])
    assert la.findings == []


FILL_USE = r"""
extern "C" __global__ void fill(float* a) { a[threadIdx.x] = 2.0f; }
extern "C" __global__ void use(const float* a, float* out) { out[threadIdx.x] = a[threadIdx.x]; }
"""


def test_what_a_checked_launch_wrote_counts_as_written_in_the_next_one():
    mod = gpuemu.RawModule(code=FILL_USE)
    buf = gpuemu.empty(32, np.float32)
    mod.get_function("fill")(1, 32, (buf,), check=True)
    la = mod.get_function("use")(1, 32, (buf, gpuemu.zeros(32, np.float32)), check=True)
    assert la.findings == []


def test_a_launch_without_initcheck_marks_its_arguments_written():
    mod = gpuemu.RawModule(code=FILL_USE)
    buf = gpuemu.empty(32, np.float32)
    mod.get_function("fill")(1, 32, (buf,))
    la = mod.get_function("use")(1, 32, (buf, gpuemu.zeros(32, np.float32)), check=True)
    assert la.findings == []


def test_local_array_read_past_what_was_written():
    src = r"""
    extern "C" __global__ void k(int* out, int m) {
        int a[4];
        a[0] = 1;
        int s = 0;
        for (int i = 0; i < m; i++) s += a[i];
        out[threadIdx.x] = s;
    }"""
    la = launch(src, "k", 1, 32, np.zeros(32, np.int32), np.int32(2), check=["initcheck"])
    [f] = la.findings
    assert (f.kind, f.line, f.space) == ("uninitialized_read", 6, "local")


def test_a_read_of_the_half_the_host_did_not_assign_is_reported():
    half = gpuemu.empty(32, np.float32)
    half[:16] = np.ones(16, np.float32)
    la = launch(READ_PLUS_ONE, "k", 1, 32, half, gpuemu.empty(32, np.float32), check=["initcheck"])
    [f] = la.findings
    assert (f.kind, f.line, f.space) == ("uninitialized_read", 4, "global")
    assert f.thread == (16, 0, 0)


def test_a_block_whose_accesses_fill_several_trace_batches_is_judged_as_one_block():
    # every warp writes its tile once, then reads it back more times than
    # three trace batches hold (executor.TRACE_CAPACITY records each)
    from gpuemu.machine.executor import TRACE_CAPACITY
    src = r"""
    extern "C" __global__ void k(float* out, int reps) {
        __shared__ float s[256];
        s[threadIdx.x] = threadIdx.x;
        float acc = 0.0f;
        for (int i = 0; i < reps; i++) acc += s[threadIdx.x ^ (i & 31)];
        out[blockIdx.x * 256 + threadIdx.x] = acc;
    }"""
    reps = 3 * TRACE_CAPACITY // 8
    out = np.zeros(512, np.float32)
    la = launch(src, "k", 2, 256, out, np.int32(reps), check=["initcheck"])
    assert la.findings == []
    # the same kernel with a read of the unwritten half: reported, once per line
    la = launch(src.replace("s[threadIdx.x] = threadIdx.x;", "if (threadIdx.x < 128) s[threadIdx.x] = 1;"),
                "k", 2, 256, out, np.int32(reps), check=["initcheck"])
    assert [(f.kind, f.line, f.space) for f in la.findings] == [("uninitialized_read", 6, "shared")]
