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


def test_processes_prints_each_process_then_least_and_median(capsys):
    assert counters_cost.main(["--size", "32", "--kernels", "transpose", "--repeats", "1",
                               "--processes", "2"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[0] for r in rows[1:3]] == ["1", "2"]
    assert rows[3].split() == ["kernel", "size", "on", "least", "on", "median", "off", "least", "off", "median"]
    least_on, median_on = map(float, rows[4].split()[2:4])
    each_on = [float(r.split()[3]) for r in rows[1:3]]
    assert rows[4].split()[0] == "transpose"
    assert least_on == round(min(each_on), 4) and least_on <= median_on
