"""gpuemu/aligned_memory.py: zeroed arrays starting on a chosen boundary."""
from __future__ import annotations

import numpy as np

from gpuemu import aligned_memory


def test_an_array_starts_on_the_boundary_zeroed_with_its_shape_and_dtype():
    a = aligned_memory.zeros((3, 5), np.float64, 256)
    assert a.ctypes.data % 256 == 0
    assert a.shape == (3, 5) and a.dtype == np.float64 and not a.any()


def test_padded_arrays_of_a_few_bytes_never_share_a_boundary_unit():
    a, b = (aligned_memory.zeros(3, np.uint8, 128, pad=True) for _ in range(2))
    assert a.ctypes.data // 128 != b.ctypes.data // 128


def test_an_empty_array_is_allowed():
    a = aligned_memory.zeros(0, np.uint8, 256)
    assert a.size == 0


def test_an_offset_starts_the_array_that_far_past_the_boundary():
    a = aligned_memory.zeros(10, np.uint8, 4096, pad=True, offset=384)
    assert a.ctypes.data % 4096 == 384 and a.size == 10


def test_a_padded_array_past_an_offset_still_holds_its_units_alone():
    a, b = (aligned_memory.zeros(4000, np.uint8, 4096, pad=True, offset=3968) for _ in range(2))
    pages = [set(range(x.ctypes.data // 4096, (x.ctypes.data + x.nbytes - 1) // 4096 + 1)) for x in (a, b)]
    assert len(pages[0]) == 2 and not pages[0] & pages[1]
