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
