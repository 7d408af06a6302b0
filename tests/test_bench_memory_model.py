"""benchmarks/memory_model.py at a small size: it records a kernel's trace
batches, replays them through both paths (which must count the same) and
prints one row per kernel. No timing asserts."""
from __future__ import annotations

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import memory_model  # noqa: E402


def test_replays_a_kernels_trace_through_both_paths(capsys):
    assert memory_model.main(["--size", "4096", "--kernels", "vecadd,histogram", "--repeats", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[:3] == ["kernel", "size", "requests"]
    assert [r.split()[0] for r in rows[1:]] == ["vecadd", "histogram"]
    assert all(r.rstrip().endswith("x") and int(r.split()[2]) > 0 for r in rows[1:])


def test_recorded_batches_are_the_launchs_requests():
    import compare
    b = compare.BENCHES["vecadd"]
    batches = memory_model.record(b, 4096)
    assert sum(len(x) for x, _, _ in batches) == 3 * 4096 // 32     # two loads and a store per warp
