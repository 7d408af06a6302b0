"""gpuemu/machine/cache_lines.py: working state on cache lines of its own."""
import numpy as np

from gpuemu.machine import cache_lines


def test_an_array_starts_on_a_line_and_is_zeroed_with_its_shape_and_dtype():
    a = cache_lines.zeros((3, 5), np.int64)
    assert a.ctypes.data % cache_lines.LINE == 0
    assert a.shape == (3, 5) and a.dtype == np.int64 and not a.any()
    assert a.flags.c_contiguous and a.flags.writeable


def test_two_small_arrays_never_share_a_line():
    arrays = [cache_lines.zeros(3, np.int32) for _ in range(16)]
    line = cache_lines.LINE
    held = [set(range(a.ctypes.data // line, (a.ctypes.data + a.nbytes - 1) // line + 1))
            for a in arrays]
    assert sum(len(h) for h in held) == len(set().union(*held))


def test_an_empty_array_is_allowed():
    assert cache_lines.zeros(0, np.uint8).size == 0
