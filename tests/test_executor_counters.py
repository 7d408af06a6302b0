"""The machine's per-line counters reach a launch's counters the same way
however many there are (executor.LaunchRun._collect: one by one when few,
summed in numpy when many): the same totals, lines and order of keys."""
from __future__ import annotations

import numpy as np

import gpuemu
from gpuemu.machine import executor

BRANCHY = r"""
extern "C" __global__ void k(int *out, const int *x) {
    int i = threadIdx.x;
    int v = x[i];
    if (i & 1) v += 3;
    __syncthreads();
    if (i < 40) { v *= 2; __threadfence(); }
    for (int j = 0; j < (i & 3); ++j) v += j;
    out[i] = v;
}
"""
FEW = executor.SMALL_TABLE              # the launch's own threshold (the test lowers it to 0)


def _launch(small_table: int, monkeypatch, preset: str):
    monkeypatch.setattr(executor, "SMALL_TABLE", small_table)
    k = gpuemu.RawModule(code=BRANCHY, arch=preset).get_function("k")
    x = gpuemu.asarray(np.arange(64, dtype=np.int32))
    return k(1, 64, (gpuemu.zeros(64, np.int32), x))


def test_few_line_counters_count_as_a_summed_table_does(monkeypatch):
    for preset in ("sm_90", "cc2x"):           # the native memory passes, and numpy's
        one_by_one = _launch(FEW, monkeypatch, preset)
        summed = _launch(0, monkeypatch, preset)
        assert one_by_one.stats == summed.stats and list(one_by_one.stats) == list(summed.stats)
        assert one_by_one.stats_by_line == summed.stats_by_line
        assert [list(c) for c in one_by_one.stats_by_line.values()] == \
               [list(c) for c in summed.stats_by_line.values()]
        assert one_by_one.stats["divergent_branches"] > 0 and one_by_one.stats["fences"] > 0
