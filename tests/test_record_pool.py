"""record_pool: timing mode's record storage goes back to the pool when its last
view dies, never while one lives, and the pool keeps at most POOL_BYTES free."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from gpuemu.timing import record_pool
from gpuemu.timing.warp_trace import EXIT, TraceRecorder
from test_native_trace import LD, ST, _charge, _records


@pytest.fixture(autouse=True)
def empty_pool():
    gc.collect()                        # earlier launches' storage comes back first
    record_pool.clear()
    yield
    record_pool.clear()


def test_records_have_the_shape_and_dtype_asked_and_start_on_a_cache_line():
    a = record_pool.records(5, 8)
    assert a.shape == (5, 8) and a.dtype == np.int32 and a.flags.c_contiguous
    assert a.ctypes.data % record_pool.ALIGN == 0
    b = record_pool.records(3, 2, np.int64)
    assert b.shape == (3, 2) and b.dtype == np.int64 and b.ctypes.data % record_pool.ALIGN == 0


def test_storage_in_use_is_not_handed_out_again():
    a = record_pool.records(100, 8)
    column = a[:, 3]                    # a view keeps the block in use
    del a
    gc.collect()
    assert record_pool.free_bytes() == 0
    column[:] = 7
    b = record_pool.records(100, 8)
    b[:] = 1
    assert column.tolist() == [7] * 100


def test_the_last_views_death_gives_the_block_back_and_the_next_ask_gets_it():
    a = record_pool.records(1000, 8)
    address = a.ctypes.data
    view = a[10:20]
    del a
    assert record_pool.free_bytes() == 0
    del view
    gc.collect()
    assert record_pool.free_bytes() >= 1000 * 8 * 4
    b = record_pool.records(500, 8)     # smaller: the same storage serves it
    assert b.ctypes.data == address
    assert record_pool.free_bytes() == 0


def test_the_smallest_free_block_large_enough_is_taken():
    big, small = record_pool.records(4000, 8), record_pool.records(1000, 8)
    small_at = small.ctypes.data
    del big, small
    gc.collect()
    assert record_pool.records(900, 8).ctypes.data == small_at


def test_the_pool_keeps_at_most_pool_bytes_dropping_the_largest(monkeypatch):
    monkeypatch.setattr(record_pool, "POOL_BYTES", 3000 * 32 + 4 * record_pool.ALIGN)
    blocks = [record_pool.records(n, 8) for n in (1000, 2000, 1500)]
    del blocks
    gc.collect()
    # 1000 + 1500 records fit the cap; with 2000 they would not: the 2000 went
    assert record_pool.free_bytes() == (1000 + 1500) * 32 + 2 * record_pool.ALIGN


def test_a_free_block_more_than_fit_times_the_request_is_left_for_a_larger_one():
    big = record_pool.records(10_000, 8)
    big_at = big.ctypes.data
    del big
    gc.collect()
    small = record_pool.records(10, 8)             # 320 bytes: the 320 KB block stays free
    assert small.ctypes.data != big_at
    assert record_pool.records(5_000, 8).ctypes.data == big_at     # within FIT: it is used


def test_the_environment_sets_the_cap_and_zero_keeps_nothing(monkeypatch):
    monkeypatch.setenv("GPUEMU_RECORD_POOL_BYTES", "0")
    a = record_pool.records(100, 8)
    del a
    gc.collect()
    assert record_pool.free_bytes() == 0
    monkeypatch.setenv("GPUEMU_RECORD_POOL_BYTES", str(2000 * 32))
    assert record_pool.cap_bytes() == 64000
    blocks = [record_pool.records(n, 8) for n in (1000, 1500)]
    del blocks
    gc.collect()
    assert record_pool.free_bytes() == 1000 * 32 + record_pool.ALIGN     # the 1500 went


def test_a_block_given_back_is_dropped_at_once_when_the_cap_is_zero(monkeypatch):
    monkeypatch.setenv("GPUEMU_RECORD_POOL_BYTES", "0")
    a = record_pool.records(100, 8)
    del a
    gc.collect()
    assert not record_pool._returned and not record_pool._free     # not held until a next request


@pytest.mark.parametrize("text", ["lots", "-1"])
def test_a_bad_cap_in_the_environment_names_the_variable(monkeypatch, text):
    monkeypatch.setenv("GPUEMU_RECORD_POOL_BYTES", text)
    with pytest.raises(ValueError, match="GPUEMU_RECORD_POOL_BYTES"):
        record_pool.cap_bytes()


def test_clear_lets_every_free_block_go():
    a = record_pool.records(10, 8)
    del a
    gc.collect()
    assert record_pool.free_bytes() > 0
    record_pool.clear()
    assert record_pool.free_bytes() == 0


def test_the_recorder_gives_its_batches_storage_back_on_release_and_the_programs_stay():
    rec = TraceRecorder(1, 1)
    rec.requests(_records([(0, 0, 0, 0, 0), (0, 0, 2, 1, 0)]), _charge([1, 2], [30, 5]), [LD, ST])
    rec.event(0, 0, EXIT, 4, 0)
    p = rec.programs()
    gc.collect()
    assert record_pool.free_bytes() == 0          # the batch is still held
    rec.release()
    gc.collect()
    assert record_pool.free_bytes() > 0           # the packed batch's block is back
    assert p.at.tolist() == [0, 2, 4] and p.cost.tolist() == [1, 2, 0]


def test_a_block_given_back_inside_a_collection_under_the_lock_does_not_hang():
    a = record_pool.records(10, 8)
    with record_pool._lock:             # a finalizer run while the pool's lock is held
        del a
        gc.collect()
    assert record_pool.free_bytes() > 0


def test_the_recorder_refuses_programs_and_requests_after_release():
    rec = TraceRecorder(1, 1)
    rec.requests(_records([(0, 0, 0, 0, 0)]), _charge([1], [30]), [LD])
    rec.event(0, 0, EXIT, 2, 0)
    rec.programs()
    rec.release()
    with pytest.raises(RuntimeError, match="after release"):
        rec.programs()
    with pytest.raises(RuntimeError, match="after release"):
        rec.requests(_records([(0, 0, 0, 0, 0)]), _charge([1], [30]), [LD])


def test_a_child_forked_during_a_request_finds_the_pool_s_lock_free():
    from fork_check import child_finds_free
    assert child_finds_free(record_pool._lock)
