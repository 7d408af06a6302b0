"""benchmarks/core_speed.py: a fixed loop's rate per core, alone and together.
No timing asserts: the rates' shape and the spread's arithmetic."""
from __future__ import annotations

import json
import os
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import core_speed  # noqa: E402


def test_spread_is_min_median_max_and_their_ratio():
    assert core_speed.spread([2.0, 4.0, 3.0]) == {"min": 2.0, "median": 3.0, "max": 4.0,
                                                   "max_over_min": 2.0}


def test_rate_counts_loops_per_second():
    assert core_speed.rate(0.05) > 0


def test_each_core_gets_slices_alone_and_together(tmp_path, capsys):
    out = tmp_path / "cores.json"
    core = sorted(os.sched_getaffinity(0))[0]
    assert core_speed.main(["--cores", str(core), "--seconds", "0.2", "--slice", "0.05",
                            "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["cores"] == [core]
    assert len(got["alone"][str(core)]) == len(got["together"][str(core)]) >= 1
    assert f"| {core} |" in capsys.readouterr().out
