"""benchmarks/compare.py at small sizes: every kernel's gpuemu part gives numpy's
result (stats on and off), the table and JSON come out, and, where numba is
installed, the Numba simulator versions agree with numpy too. No timing asserts."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import compare  # noqa: E402

NAMES = ["vecadd", "transpose", "reduce_shared", "reduce_shfl", "matmul", "histogram"]
# Numba's simulator runs a Python thread per CUDA thread: keep its launches tiny.
NUMBA_SIZES = {"vecadd": 512, "transpose": 32, "reduce_shared": 256, "matmul": 16, "histogram": 1024}


@pytest.mark.parametrize("name", NAMES)
def test_gpuemu_part_matches_numpy(name):
    b = compare.BENCHES[name]
    rows = compare.bench_kernel(b, b.warm_size, b.numba_quick, 1, "skipped in the test", None,
                                cpu=0, log=None)
    engines = [r["engine"] for r in rows]
    assert engines == ["gpuemu stats", "gpuemu no-stats", "gpuemu timing", "gpuemu check",
                       "gpuemu check no-stats", "numba-sim", "numpy"]
    g = rows[0]
    assert g["thread_instructions"] > 0 and g["threads"] == b.threads(b.make_inputs(b.warm_size))
    numba = rows[engines.index("numba-sim")]
    assert numba["seconds"] is None and numba["note"]
    for r in rows[2:5]:     # a mode this gpuemu lacks is an 'absent' row, never a crash
        assert (r["seconds"] is not None) == compare.mode_available(r["engine"].split()[1])
    table = compare.format_table(rows)
    assert name in table and "gpuemu no-stats" in table
    json.dumps(rows)                      # the JSON rows serialise


def test_workers_add_a_row_with_the_speedup_over_one_worker():
    b = compare.BENCHES["vecadd"]
    rows = compare.bench_kernel(b, b.warm_size, None, 1, "skipped", None, cpu=0, log=None,
                                modes=(), workers=2)
    w = next(r for r in rows if r["engine"] == "gpuemu no-stats x2")
    assert w["seconds"] > 0 and "one worker" in w["note"]


def test_check_catches_a_wrong_result():
    b = compare.BENCHES["vecadd"]
    inp = b.make_inputs(256)
    with pytest.raises(AssertionError, match="wrong result"):
        b.check(inp["a"] - inp["b"], inp, "test")
    m = compare.BENCHES["matmul"]
    inp = m.make_inputs(16)
    out = m.native(inp).copy()
    out[3, 4] += 1.0
    with pytest.raises(AssertionError):
        m.check(out, inp, "test")


@pytest.mark.parametrize("name", sorted(NUMBA_SIZES))
def test_numba_versions_match_numpy(name):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"   # before numba is first imported
    pytest.importorskip("numba")
    import numba_kernels

    b = compare.BENCHES[name]
    inp = b.make_inputs(NUMBA_SIZES[name])
    b.check(numba_kernels.LAUNCHES[name](inp), inp, "numba")


def test_same_launch_shapes_as_numba():
    """Numba's histogram gets the grid compare.py gives gpuemu (same work per thread)."""
    b = compare.BENCHES["histogram"]
    for n in (b.full, b.numba_full, b.quick):
        inp = b.make_inputs(n)
        assert b.threads(inp) * compare.HIST_PER_THREAD == n
    assert np.asarray(b.native(b.make_inputs(4096))).sum() == 4096


@pytest.mark.parametrize("name,small,full", [("vecadd", 1024, 4096), ("transpose", 32, 64),
                                             ("reduce_shared", 256, 1024), ("matmul", 16, 64),
                                             ("histogram", 1024, 4096)])
def test_numba_shape_has_the_same_work_per_thread(name, small, full):
    """Numba's smaller launch does gpuemu's per-thread work of the full launch, so per-thread
    times compare like with like."""
    b = compare.BENCHES[name]
    k, _, _ = compare.compile_kernel(b)
    per_thread = []
    for inp in (b.small_inputs(small, full), b.make_inputs(full)):
        _, launch = compare.gpuemu_launch(b, k, inp, True, 1)
        per_thread.append(launch.stats["thread_instructions"] / b.threads(inp))
    assert per_thread[0] == pytest.approx(per_thread[1], rel=0.01)


def test_repeats_sets_the_warm_runs_of_each_measurement(tmp_path, monkeypatch):
    out = tmp_path / "rows.json"
    cpus = os.sched_getaffinity(0)
    real, asked = compare.gpuemu_launch, []

    def launch(bench, k, inp, stats, repeats, *a, **kw):
        times, got = real(bench, k, inp, stats, repeats, *a, **kw)
        asked.append((stats, repeats, len(times)))
        return times, got
    monkeypatch.setattr(compare, "gpuemu_launch", launch)
    try:                                  # main() pins the process to one CPU
        compare.main(["--quick", "--no-numba", "--kernels", "vecadd", "--modes", "", "--repeats", "2",
                      "--keep-cache", "--json", str(out)])
    finally:
        os.sched_setaffinity(0, cpus)
    got = json.loads(out.read_text())
    assert got["meta"]["repeats"] == 2
    # a one-launch warm-up, then REPEATS timed launches, counters on and off
    assert asked == [(True, 1, 1), (True, 2, 2), (False, 1, 1), (False, 2, 2)]
