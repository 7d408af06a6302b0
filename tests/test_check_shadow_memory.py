"""Which bytes of fresh global allocations are written."""
from __future__ import annotations

import numpy as np

import gpuemu
from gpuemu.check.shadow_memory import GlobalShadow, forget_args
from gpuemu.device_memory import device_memory


def test_empty_has_a_shadow_and_zeros_and_asarray_do_not():
    assert gpuemu.empty(8, np.int32)._alloc.shadow is not None
    assert getattr(gpuemu.zeros(8, np.int32)._alloc, "shadow", None) is None
    assert getattr(gpuemu.asarray(np.ones(8))._alloc, "shadow", None) is None


def test_set_marks_every_byte_written():
    a = gpuemu.empty(8, np.int32)
    a.set(np.arange(8, dtype=np.int32))
    assert a._alloc.shadow is None


def test_locate_written_and_mark_by_device_address():
    a = gpuemu.empty(16, np.int32)
    sh = GlobalShadow(device_memory())
    idx, off = sh.locate(np.array([a.device_address + 8, 12], dtype=np.int64))
    assert idx[1] == -1 and off[0] == 8
    assert sh.written(idx, off).tolist() == [False, True]
    sh.mark(idx[:1], off[:1], 4)
    assert sh.written(idx, off).tolist() == [True, True]
    assert a._alloc.shadow[8:12].all() and not a._alloc.shadow[12:].any()


def test_forget_args_drops_the_shadow_of_argument_arrays():
    a = gpuemu.empty(4, np.float32)
    forget_args((a, np.int32(3)))
    assert a._alloc.shadow is None


def written_elements(a) -> list:
    """Which elements of a fresh 1-d int32/float32 array count as written."""
    sh = a._alloc.shadow
    if sh is None:
        return list(range(a.size))
    b = sh[a._offset:a._offset + a.nbytes].reshape(a.size, a.dtype.itemsize)
    assert (b.all(axis=1) == b.any(axis=1)).all()      # never half an element
    return np.flatnonzero(b.all(axis=1)).tolist()


def test_slice_assignment_marks_only_the_slice_written():
    a = gpuemu.empty(8, np.int32)
    a[2:5] = 7
    assert written_elements(a) == [2, 3, 4]


def test_strided_assignment_marks_only_the_chosen_elements():
    a = gpuemu.empty(8, np.float32)
    a[1::3] = np.ones(3, np.float32)
    assert written_elements(a) == [1, 4, 7]


def test_integer_and_boolean_index_assignment_mark_only_the_chosen_elements():
    a = gpuemu.empty(8, np.int32)
    a[[6, 0]] = 1
    assert written_elements(a) == [0, 6]
    a[np.arange(8) == 3] = 2
    assert written_elements(a) == [0, 3, 6]


def test_2d_row_and_column_assignment_mark_their_elements():
    a = gpuemu.empty((3, 4), np.int32)
    a[1] = 5
    a[:, 0] = 6
    sh = a._alloc.shadow.reshape(3, 4, 4)
    want = np.zeros((3, 4), bool)
    want[1] = want[:, 0] = True
    np.testing.assert_array_equal(sh.all(axis=2), want)


def test_assignment_through_a_view_marks_the_view_bytes_of_the_allocation():
    a = gpuemu.empty(16, np.int32)
    v = gpuemu.DeviceArray(a._alloc, (4,), np.int32, offset=8 * 4)     # a[8:12]
    v[1:3] = 9
    assert written_elements(a) == [9, 10]
    assert a.get()[9:11].tolist() == [9, 9]


def test_assigning_every_element_drops_the_shadow():
    a = gpuemu.empty(6, np.int32)
    a[::2] = 1
    a[1::2] = 2
    assert a._alloc.shadow is None
