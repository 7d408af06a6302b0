"""gpuemu/machine/cache_lines.py: working state on memory pages of its own."""
import numpy as np

from gpuemu.machine import cache_lines


def test_an_array_starts_on_a_line_and_is_zeroed_with_its_shape_and_dtype():
    a = cache_lines.zeros((3, 5), np.int64)
    assert a.ctypes.data % cache_lines.LINE == 0
    assert a.shape == (3, 5) and a.dtype == np.int64 and not a.any()
    assert a.flags.c_contiguous and a.flags.writeable


def test_two_arrays_never_share_a_page():
    arrays = [cache_lines.zeros(n, np.uint8) for n in (3, 5000, 3, 12800, 40, 3)]
    held = [set(cache_lines.pages(a)) for a in arrays]
    assert sum(len(h) for h in held) == len(set().union(*held))


def test_an_array_with_no_room_left_in_its_first_page_goes_on_over_pages_of_its_own():
    arrays = [cache_lines.zeros(4000, np.uint8) for _ in range(cache_lines.PAGE // cache_lines.LINE)]
    held = [set(cache_lines.pages(a)) for a in arrays]
    assert sum(len(h) for h in held) == len(set().union(*held))
    for a in arrays:
        a[:] = 7                                  # all of it is usable
        assert (a == 7).all()


def test_small_arrays_made_in_turn_start_at_different_offsets_into_their_pages():
    offsets = {cache_lines.zeros(8, np.int64).ctypes.data % cache_lines.PAGE for _ in range(8)}
    assert len(offsets) == 8


def test_the_pages_of_an_array_are_those_its_bytes_touch():
    a = cache_lines.zeros(cache_lines.PAGE, np.uint8)          # a page's bytes, a line into it
    assert len(cache_lines.pages(a)) == 2
    assert cache_lines.pages(a[:1]) == range(a.ctypes.data // cache_lines.PAGE, a.ctypes.data // cache_lines.PAGE + 1)


def test_an_empty_array_is_allowed():
    assert cache_lines.zeros(0, np.uint8).size == 0
