"""benchmarks/scale.py at small sizes: one row per size, each size warmed
by two untimed launches, results checked inside. No timing asserts."""
from __future__ import annotations

import json
import os
import sys

import gpuemu
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import scale  # noqa: E402


def test_sizes_step_by_four_from_1k(tmp_path, capsys):
    out = tmp_path / "scale.json"
    cpus = os.sched_getaffinity(0)
    try:
        assert scale.main(["--max", "16K", "--stats", "--json", str(out)]) == 0
    finally:
        os.sched_setaffinity(0, cpus)        # it pins itself to one CPU
    rows = json.loads(out.read_text())
    assert [r["threads"] for r in rows] == [1024, 4096, 16384]
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:]] == ["1K", "4K", "16K"]


def test_each_size_is_launched_twice_untimed_before_its_timed_runs():
    """A new shape's first launch sets up its run, the second is the first
    kept one (the RSS growth covers both): two launches before the timed
    ones, and one after them for the memory (tracemalloc)."""
    k = gpuemu.RawModule(path=str(REPO / "programs" / "vecadd.cu")).get_function("vecadd")
    calls = []

    def counted(*args, **kw):
        calls.append(kw["stats"])
        return k(*args, **kw)
    row = scale.measure(counted, 2048, stats=False, workers=1, repeats=3)
    assert calls == [False] * (2 + 3 + 1)
    assert row["threads"] == 2048 and row["seconds"] > 0


def test_rounds_time_every_size_in_turn():
    """A round times each size once, smallest first (so every size sees the
    machine's speed spells): the grid of each timed launch, round by round."""
    k = gpuemu.RawModule(path=str(REPO / "programs" / "vecadd.cu")).get_function("vecadd")
    grids = []

    def counted(grid, *args, **kw):
        grids.append(grid[0])
        return k(grid, *args, **kw)
    rows = scale.sweep(counted, [1024, 4096], stats=False, workers=1, rounds=2)
    warm = [4, 4, 16, 16]                # each size's two untimed launches
    timed = [4] * 20 + [16] * 20 + [4] * 20 + [16] * 20
    assert grids == warm + timed + [4, 16]     # then one more each for the memory
    assert [r["threads"] for r in rows] == [1024, 4096]
