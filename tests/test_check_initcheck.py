"""initcheck: a read of a location before any write to it, by emulation order."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.check.accesses import Rows
from gpuemu.check.initcheck import (race_symptoms, race_symptoms_reference, uninitialized,
                                    uninitialized_reference)
from gpuemu.check.message_passing import Acquired
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


def test_local_array_read_past_what_was_written_names_the_array_and_the_byte():
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
    assert (f.extra["object"], f.extra["offset"]) == ("the local array 'a' [0, 16)", 4)
    assert "(byte 4 of the local array 'a' [0, 16))" in f.message


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


def rows_at(seq, warp, epoch, unit, write) -> Rows:
    """Reads and writes of threads (lane 0 of each warp) of one block."""
    n = len(seq)
    z = np.zeros(n, np.int64)
    return Rows(seq=np.array(seq), block=z, warp=np.array(warp), lane=z, epoch=np.array(epoch), wsync=z,
                unit=np.array(unit), line=np.arange(n) + 1, write=np.array(write), read=~np.array(write),
                atomic=np.zeros(n, bool))


def test_a_read_a_later_unordered_write_races_with_is_the_races_symptom():
    # warp 0 reads unit 5, warp 1 writes it later in the same barrier interval
    r = rows_at([0, 1], [0, 1], [0, 0], [5, 5], [False, True])
    assert race_symptoms_reference(r, np.array([0]), (r.unit,), 64, True).tolist() == [True]


def test_a_read_a_barrier_orders_before_the_write_is_uninitialised():
    r = rows_at([0, 1], [0, 1], [0, 1], [5, 5], [False, True])
    assert race_symptoms_reference(r, np.array([0]), (r.unit,), 64, True).tolist() == [False]


def test_a_write_to_another_location_explains_no_read():
    r = rows_at([0, 1], [0, 1], [0, 0], [5, 6], [False, True])
    assert race_symptoms_reference(r, np.array([0]), (r.unit,), 64, True).tolist() == [False]


def random_symptom_rows(rng, n: int, blocks: int):
    r = rows_at(np.sort(rng.integers(0, 60, n)), rng.integers(0, 3, n), np.sort(rng.integers(0, 3, n)),
                rng.integers(0, 6, n), rng.random(n) < 0.4)
    r.block = rng.integers(0, blocks, n)
    r.atomic = rng.random(n) < 0.2
    return r


def symptoms_agree(r, keys, release, acquire) -> np.ndarray:
    """race_symptoms against race_symptoms_reference on r's uninitialised reads; the reference's."""
    bad = uninitialized_reference(r, keys)
    want = race_symptoms_reference(r, bad, keys, 64, True, release, acquire)
    np.testing.assert_array_equal(race_symptoms(r, bad, keys, 64, True, release, acquire), want)
    return want


@pytest.mark.parametrize("seed", range(6))
def test_race_symptoms_fast_path_agrees_with_the_reference(seed):
    rng = np.random.default_rng(seed)
    r = random_symptom_rows(rng, 120, 2)
    want = symptoms_agree(r, (r.block, r.unit), rng.random(120) < 0.3, rng.random(120) < 0.3)
    assert want.any() and not want.all()


@pytest.mark.parametrize("seed", range(6))
def test_race_symptoms_fast_path_agrees_with_the_reference_with_flags_read_per_block(seed):
    rng = np.random.default_rng(seed)
    n, pubs, reads = 120, 8, 16
    r = random_symptom_rows(rng, n, 4)
    acquire = Acquired(r.block, r.seq, r.seq + rng.integers(1, 4, n), rng.integers(0, 4, pubs),
                       rng.integers(0, 2, pubs), rng.integers(0, 60, pubs), rng.integers(0, 4, reads),
                       rng.integers(0, 2, reads), rng.integers(0, 60, reads))
    assert symptoms_agree(r, (r.unit,), rng.random(n) < 0.5, acquire).any()


def test_an_uninitialised_read_on_a_line_that_also_races_is_reported():
    # a[63 - t] races (warp 0 reads what warp 1 writes); u is never written
    src = r"""
    extern "C" __global__ void k(int* o) {
        __shared__ int a[64];
        __shared__ int u[64];
        int t = threadIdx.x;
        a[t] = t;
        o[t] = a[63 - t] + u[t];
    }"""
    la = launch(src, "k", 1, 64, np.zeros(64, np.int32), check=True)
    uninit = [f for f in la.findings if f.kind == "uninitialized_read"]
    assert sorted({f.kind for f in la.findings}) == ["race", "uninitialized_read"]
    [f] = uninit
    # the 64 reads of u only: the 32 early reads of a are the race, reported as such
    assert (f.line, f.space, f.extra["count"]) == (7, "shared", 64)


def test_an_uninitialised_global_read_on_a_line_with_an_inter_block_race_is_reported():
    src = r"""
    extern "C" __global__ void g(int* out, const int* tmp) {
        int i = threadIdx.x;
        out[i] += tmp[i];
    }"""
    tmp = gpuemu.empty(32, np.int32)
    la = launch(src, "g", 2, 32, np.zeros(32, np.int32), tmp, check=True)
    uninit = [f for f in la.findings if f.kind == "uninitialized_read"]
    [f] = uninit
    assert (f.line, f.space, f.extra["count"]) == (4, "global", 64)
    assert f.address == tmp._alloc.address
