"""range_search: the first index of a range whose value reaches a bound, the
block and sparse-table search against the plain rule."""
from __future__ import annotations

import numpy as np
import pytest

from gpuemu.check.range_search import B, RangeMax, first_at_least, first_at_least_reference


def test_the_first_value_at_least_the_bound_is_found():
    v = np.array([1, 5, 2, 7, 3])
    assert first_at_least(v, [0, 2, 0], [5, 5, 3], [6, 6, 9]).tolist() == [3, 3, -1]


def test_an_answer_at_or_past_the_range_end_is_none():
    v = np.array([0, 0, 9])
    assert first_at_least(v, [0], [2], [5]).tolist() == [-1]


def test_an_empty_range_has_no_answer():
    assert first_at_least(np.array([9, 9]), [1], [1], [0]).tolist() == [-1]


@pytest.mark.parametrize("seed", range(8))
def test_agrees_with_the_plain_rule_across_many_blocks(seed):
    rng = np.random.default_rng(seed)
    n = 5 * B + seed * 7
    v = rng.integers(0, 1000, n)
    lo = rng.integers(0, n, 300)
    hi = np.minimum(lo + rng.integers(0, 4 * B, 300), n)
    bound = rng.integers(900, 1001, 300)         # rare hits: far answers, many none
    assert first_at_least(v, lo, hi, bound).tolist() == first_at_least_reference(v, lo, hi, bound)


def test_one_range_max_answers_rounds_of_queries_that_start_past_the_last_answer():
    # racecheck's rounds: each asks again from one past the access it found
    rng = np.random.default_rng(3)
    v = rng.integers(0, 1000, 7 * B)
    search = RangeMax(v)
    lo, hi, bound = rng.integers(0, B, 50), np.full(50, len(v)), rng.integers(950, 1001, 50)
    for _ in range(4):
        got = search.first_at_least(lo, hi, bound)
        assert got.tolist() == first_at_least_reference(v, lo, hi, bound)
        lo = np.where(got >= 0, got + 1, hi)
