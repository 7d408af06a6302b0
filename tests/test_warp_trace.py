"""The trace recorder (gpuemu/timing/warp_trace.py) hands the stop points over
as one int32 record per point (WarpPrograms.items) when every number fits,
and as int64 columns otherwise: the same points in the same order either way."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import gpuemu
from conftest import PROGRAMS
from test_timing_warp_fragments import WARP_LOCKS
from gpuemu.jit import abi
from gpuemu.timing import timing_mode, warp_trace
from gpuemu.timing.warp_trace import ITEM_COLUMNS, MEM, TraceRecorder

COLUMNS = ("at", "kind", "pipe", "cost", "latency", "use", "line")


def _transpose():
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    k((2, 2), (32, 8), (np.zeros_like(a), a, np.int32(64)), mode="timing")


def _warp_locks():
    # warps split into fragments (sm_90): their points are merged into one stream
    k = gpuemu.RawModule(code=WARP_LOCKS, arch="sm_90").get_function("k")
    z = lambda n: np.zeros(n, np.int32)  # noqa: E731
    k((2,), (64,), (z(4), z(4), z(64)), mode="timing")


@pytest.mark.parametrize("launch", [_transpose, _warp_locks])
def test_the_int32_records_hold_what_the_int64_columns_hold(monkeypatch, launch):
    recorders = []

    def keep(nw, nb):
        recorders.append(TraceRecorder(nw, nb))
        recorders[-1].release = lambda: None       # its batches kept past the launch
        return recorders[-1]

    monkeypatch.setattr(timing_mode, "TraceRecorder", keep)
    launch()
    rec = recorders[0]
    packed = rec.programs()
    rec._fits = False                   # as when a number does not fit int32
    wide = rec.programs()
    assert packed.items is not None and wide.items is None
    assert packed.items.dtype == np.int32 and packed.items.ctypes.data % 64 == 0
    assert packed.at.size == wide.at.size and (packed.kind != MEM).sum() > 0
    for name in ("start", "end", "instructions") + COLUMNS:
        assert np.array_equal(getattr(packed, name), getattr(wide, name)), name
    for j, name in enumerate(COLUMNS):
        assert np.shares_memory(getattr(packed, name), packed.items)
        assert np.array_equal(packed.items[:, j], getattr(wide, name)), name
    warp = np.repeat(np.arange(wide.num_warps), wide.end - wide.start)
    assert np.array_equal(packed.items[:, ITEM_COLUMNS.index("warp")], warp)


def test_a_request_costing_more_than_int32_gives_int64_columns():
    rec = TraceRecorder(1, 1)
    r = np.zeros(1, abi.TRACE_DTYPE)
    instrs = [SimpleNamespace(id=0, op="ld", line=3, use_distance=2)]
    rec.requests(r, SimpleNamespace(cycles=[1 << 31], latency=[5]), instrs)
    rec.event(0, 0, warp_trace.EXIT, 4, 0)
    p = rec.programs()
    assert p.items is None
    assert p.cost.tolist() == [1 << 31, 0] and p.use.tolist() == [2, -1]
    assert p.at.tolist() == [0, 4] and p.instructions.tolist() == [4]
