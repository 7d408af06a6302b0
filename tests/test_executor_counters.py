"""The machine's per-line counters reach a launch's counters as a summed
table adds them (executor.LaunchRun: Stats.defer_table, read when the
counters are; the reference adds each counter's column at once with
Stats.add_lines, the memory model's numpy sums): the same totals, lines
and order of keys."""
from __future__ import annotations

import numpy as np

import gpuemu
from gpuemu.stats import Stats

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


def _launch(preset: str):
    k = gpuemu.RawModule(code=BRANCHY, arch=preset).get_function("k")
    x = gpuemu.asarray(np.arange(64, dtype=np.int32))
    return k(1, 64, (gpuemu.zeros(64, np.int32), x))


def _summed_at_once(self, names, table, name_set=None):
    """The reference: the table summed in numpy when the launch ends, each
    counter's nonzero lines by add_lines (a counter of none is not added)."""
    lines = np.arange(len(table))
    for j, name in enumerate(names):
        nonzero = table[:, j] != 0
        if nonzero.any():
            self.add_lines(name, lines[nonzero], table[nonzero, j])


def _ended_at_once(self, named, table, added):
    """Stats.defer_end (the machine's native end: its table's bytes) with the reference's table."""
    names, data, name_set = table
    self.defer_named(*named)
    _summed_at_once(self, names, np.frombuffer(data, dtype=np.int64).reshape(-1, len(names)), name_set)
    self.add(*added)


def test_line_counters_count_as_a_summed_table_does(monkeypatch):
    for preset in ("sm_90", "cc2x"):           # the native memory passes, and numpy's
        deferred = _launch(preset)
        with monkeypatch.context() as m:
            m.setattr(Stats, "defer_table", _summed_at_once)
            m.setattr(Stats, "defer_end", _ended_at_once)
            summed = _launch(preset)
        assert deferred.stats == summed.stats and list(deferred.stats) == list(summed.stats)
        assert deferred.stats_by_line == summed.stats_by_line
        assert [list(c) for c in deferred.stats_by_line.values()] == \
               [list(c) for c in summed.stats_by_line.values()]
        assert deferred.stats["divergent_branches"] > 0 and deferred.stats["fences"] > 0
