"""engine.address gives what numpy's a.ctypes.data gives, for every kind of
array the native passes are handed."""
import numpy as np
import pytest

from gpuemu.jit.engine import address


def _read_only(a):
    a.setflags(write=False)
    return a


ARRAYS = {
    "writable": lambda: np.arange(10, dtype=np.int64),
    "offset view": lambda: np.arange(10, dtype=np.int64)[3:],
    "read-only (a kernel table)": lambda: _read_only(np.arange(10, dtype=np.int8)),
    "read-only view": lambda: _read_only(np.arange(10, dtype=np.int8))[2:],
    "rows apart (trace addresses)": lambda: np.zeros((4, 40), dtype=np.int64)[:, :32],
    "a record field": lambda: np.zeros(4, dtype=[("a", "i4"), ("b", "i8")])["b"],
    "empty": lambda: np.zeros(0, dtype=np.int64),
}


@pytest.mark.parametrize("kind", ARRAYS)
def test_the_address_is_numpys(kind):
    a = ARRAYS[kind]()
    assert address(a) == a.ctypes.data
    assert address(a) == a.ctypes.data          # again (a read-only one is remembered)


def test_a_read_only_array_freed_and_another_at_its_id_gets_its_own_address():
    seen = set()
    for _ in range(50):
        a = _read_only(np.arange(1000, dtype=np.int64) + len(seen))
        assert address(a) == a.ctypes.data
        seen.add(a.ctypes.data)
        del a


def test_a_remembered_read_only_array_is_not_kept_alive():
    import gc
    import weakref
    from gpuemu.jit import engine
    a = _read_only(np.arange(100, dtype=np.int64))
    address(a)
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None
    assert all(r() is not None for r, _ in engine._READ_ONLY.values())
