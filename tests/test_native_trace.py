"""The recorder's native hand-off (gpuemu/timing/native_trace.py): requests
packed per batch and counting-sorted by warp give the very records of the
numpy path (TraceRecorder._numpy_programs); what it cannot take (numbers
beyond int32, a warp's requests out of order) goes the numpy way."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import gpuemu
from conftest import PROGRAMS
from gpuemu.jit import abi
from gpuemu.timing import native_trace, timing_mode
from gpuemu.timing.warp_trace import BARRIER, EXIT, ITEM_COLUMNS, MEM, PIPE_LSU, PIPE_SHARED, TraceRecorder

FIELDS = ("start", "end", "instructions") + ITEM_COLUMNS[:7]
LD = SimpleNamespace(id=0, op="ld", line=3, use_distance=2)
ST = SimpleNamespace(id=1, op="st", line=4)


def _recorded(launch) -> TraceRecorder:
    """The launch's recorder, its request batches kept (time_launch would release them)."""
    recorders = []
    orig = timing_mode.TraceRecorder

    def keep(nw, nb):
        rec = orig(nw, nb)
        rec.release = lambda: None
        recorders.append(rec)
        return rec

    timing_mode.TraceRecorder = keep
    try:
        launch()
    finally:
        timing_mode.TraceRecorder = orig
    return recorders[0]


def _matmul():
    k = gpuemu.RawModule(path=str(PROGRAMS / "matmul_tiled.cu")).get_function("matmul_tiled")
    a = np.random.default_rng(2).random((48, 48), dtype=np.float32)
    k((3, 3), (16, 16), (a, a, np.zeros_like(a), np.int32(48), np.int32(48), np.int32(48)),
      mode="timing")


def _transpose():
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    k((2, 2), (32, 8), (np.zeros_like(a), a, np.int32(64)), mode="timing")


def _assert_same(p, q) -> None:
    for name in FIELDS:
        assert np.array_equal(getattr(p, name), getattr(q, name)), name
    assert np.array_equal(p.items, q.items)


@pytest.mark.parametrize("launch", [_matmul, _transpose])
def test_real_kernels_are_sorted_natively_into_the_numpy_paths_records(launch):
    rec = _recorded(launch)
    rec.drain_events()
    ev = np.concatenate(rec._ev)
    native = rec._native_programs(ev)
    assert native is not None and (native.kind == BARRIER).any() and (native.kind == MEM).any()
    assert native.items.ctypes.data % 64 == 0
    _assert_same(native, rec._numpy_programs(ev))


def _records(rows) -> np.ndarray:
    """Trace records from (block, warp, icount, instr id, space) tuples."""
    r = np.zeros(len(rows), abi.TRACE_DTYPE)
    for i, (blk, w, icount, iid, space) in enumerate(rows):
        r[i]["block"], r[i]["warp"], r[i]["icount"], r[i]["instr"], r[i]["space"] = blk, w, icount, iid, space
    return r


def _charge(cycles, latency):
    return SimpleNamespace(cycles=np.array(cycles, np.int64), latency=np.array(latency, np.int64))


def test_a_barrier_goes_before_a_request_at_the_same_count_and_the_exit_last():
    rec = TraceRecorder(2, 1)
    rec.requests(_records([(0, 1, 3, 0, 1), (0, 0, 3, 1, 0)]), _charge([4, 0], [30, 500]), [LD, ST])
    for w in (0, 1):
        rec.event(0, w, BARRIER, 3, 7)
        rec.event(0, w, EXIT, 5, 8)
    p = rec.programs()
    assert p.items is not None
    rows = p.items[:, :7].tolist()
    #          at kind      pipe         cost lat use line
    assert rows == [[3, BARRIER, PIPE_LSU, 0, 0, -1, 7], [3, MEM, PIPE_LSU, 1, 500, -1, 4],
                    [5, EXIT, PIPE_LSU, 0, 0, -1, 8],
                    [3, BARRIER, PIPE_LSU, 0, 0, -1, 7], [3, MEM, PIPE_SHARED, 4, 30, 2, 3],
                    [5, EXIT, PIPE_LSU, 0, 0, -1, 8]]
    assert p.start.tolist() == [0, 3] and p.end.tolist() == [3, 6]
    assert p.instructions.tolist() == [5, 5]
    assert p.items[:, 7].tolist() == [0, 0, 0, 1, 1, 1]


def test_a_warps_requests_out_of_order_are_sorted_the_numpy_way():
    rec = TraceRecorder(1, 1)
    rec.requests(_records([(0, 0, 6, 0, 0)]), _charge([1], [9]), [LD, ST])
    rec.requests(_records([(0, 0, 2, 1, 1)]), _charge([1], [9]), [LD, ST])
    rec.event(0, 0, EXIT, 8, 0)
    rec.drain_events()
    ev = np.concatenate(rec._ev)
    assert rec._native_programs(ev) is None
    p = rec.programs()
    assert p.at.tolist() == [2, 6, 8] and p.items is not None


@pytest.mark.parametrize("cycles, icount, iid, use0, line0", [
    ([1 << 31], 0, 0, 2, 3), ([1], 1 << 32, 0, 2, 3), ([1], 0, 5, 2, 3), ([1], 0, 0, -2, 3),
    ([1], 0, 0, 1 << 31, 3), ([1], 0, 0, 2, 1 << 31), ([1], 0, 0, 2, -(1 << 31) - 1)])
def test_pack_refuses_what_does_not_fit_and_counts_nothing(cycles, icount, iid, use0, line0):
    # a cost beyond int32; a fragment's count (its id in bits 32-63); an instruction unknown;
    # a use below -1 or beyond int32; a row beyond int32 either way
    cnt = np.zeros(1, np.int64)
    use, line = np.array([use0, -1], np.int64), np.array([line0, 4], np.int64)
    got = native_trace.pack(_records([(0, 0, icount, iid, 0)]), cycles, [5], use, line, 1, cnt)
    assert got is None and cnt.tolist() == [0]


def test_a_batch_that_does_not_fit_keeps_int64_columns():
    rec = TraceRecorder(1, 1)
    rec.requests(_records([(0, 0, 0, 0, 0)]), _charge([1 << 31], [5]), [LD, ST])
    rec.requests(_records([(0, 0, 1, 1, 0)]), _charge([2], [5]), [LD, ST])
    rec.event(0, 0, EXIT, 4, 0)
    p = rec.programs()
    assert p.items is None
    assert p.cost.tolist() == [1 << 31, 2, 0] and p.at.tolist() == [0, 1, 4]


def test_fits_takes_each_fields_bounds_and_nothing_past_them():
    top = native_trace.INT32_MAX
    assert native_trace.fits(at=np.array([0, top]), use=np.array([-1, top]), line=np.array([-top - 1, top]),
                             cost=np.array([1, top]), latency=np.array([1, top]))
    assert native_trace.fits(at=np.zeros(0, np.int64))
    for name, bad in (("at", -1), ("at", top + 1), ("use", -2), ("line", -top - 2), ("cost", top + 1),
                      ("latency", top + 1)):
        assert not native_trace.fits(**{name: np.array([0, bad])}), (name, bad)


def test_pack_takes_the_bounds_themselves():
    cnt = np.zeros(1, np.int64)
    top = native_trace.INT32_MAX
    use, line = np.array([-1, top], np.int64), np.array([-top - 1, top], np.int64)
    got = native_trace.pack(_records([(0, 0, top, 0, 0), (0, 0, top, 1, 0)]), [top, 1], [1, top],
                            use, line, 1, cnt)
    assert got is not None and cnt.tolist() == [2]
    assert got[:, 3].tolist() == [top, 1] and got[:, 4].tolist() == [1, top]
    assert got[:, 5].tolist() == [-1, top] and got[:, 6].tolist() == [-top - 1, top]
