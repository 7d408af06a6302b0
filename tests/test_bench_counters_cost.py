"""benchmarks/counters_cost.py at a small size: one row per kernel, counters
on and off, results checked against numpy. No timing asserts."""
from __future__ import annotations

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import counters_cost  # noqa: E402


def test_times_each_kernel_with_counters_on_and_off(capsys):
    assert counters_cost.main(["--size", "64", "--kernels", "matmul,transpose", "--repeats", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split() == ["kernel", "size", "on", "s", "off", "s", "on/off", "overhead", "s"]
    assert [r.split()[0] for r in rows[1:]] == ["matmul", "transpose"]
    assert all(float(r.split()[2]) > 0 and r.split()[4].endswith("x") for r in rows[1:])
