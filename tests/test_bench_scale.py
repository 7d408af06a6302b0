"""benchmarks/scale.py at small sizes: one row per size, each against the
sweep's best per-thread time, results checked inside. No timing asserts."""
from __future__ import annotations

import json
import os
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import scale  # noqa: E402


def test_sizes_step_by_four_and_compare_with_the_best(tmp_path, capsys):
    out = tmp_path / "scale.json"
    cpus = os.sched_getaffinity(0)
    try:
        assert scale.main(["--max", "16K", "--stats", "--json", str(out)]) == 0
    finally:
        os.sched_setaffinity(0, cpus)        # it pins itself to one CPU
    rows = json.loads(out.read_text())
    assert [r["threads"] for r in rows] == [1024, 4096, 16384]
    assert min(r["vs_best"] for r in rows) == 1.0
    assert all(r["vs_best"] >= 1.0 for r in rows)
    assert "16K" in capsys.readouterr().out
