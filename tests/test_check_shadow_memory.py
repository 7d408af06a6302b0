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
    a.set(np.arange(8))
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
