"""benchmarks/machine_ceiling.py: numpy work split over threads as the block
workers' pool splits blocks, the reference a speed-up is read against."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import machine_ceiling  # noqa: E402


def test_the_work_split_over_two_threads_computes_what_one_thread_computes():
    c = machine_ceiling.Ceiling(0.0005, 2)
    c.run(1)
    one = c.c.copy()
    c.c[:] = 0
    c.run(2)
    np.testing.assert_array_equal(c.c, one)


def test_every_share_of_the_work_is_covered_once_whatever_the_thread_count():
    c = machine_ceiling.Ceiling(0.0005, 3)
    for n in (1, 2, 3):
        c.c[:] = 0
        c.run(n)
        assert (c.c > 0).all()
        assert c._share[0][0] == 0 and c._share[-1][1] == c.c.size
        assert all(a[1] == b[0] for a, b in zip(c._share, c._share[1:]))


def test_the_work_is_calibrated_to_at_least_one_pass():
    assert machine_ceiling.Ceiling(1e-9, 2).passes == 1
