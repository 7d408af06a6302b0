"""native_lru.LruState.reserve: the planes grow by doubling, or at once to
the rows a state of the same geometry grew to before (what the walk finds
is tests/test_cache.py's: the same at any capacity)."""
import numpy as np

from gpuemu.memory import native_lru
from gpuemu.memory.native_lru import LruState, lru_walk


def test_a_state_grows_by_doubling_from_64_rows(monkeypatch):
    monkeypatch.setattr(native_lru, "GROWN", {})
    st = LruState(num_sets=4096, assoc=3)
    st.reserve(10)
    assert st.planes.shape == (3, 64, 3)
    st.reserve(100)
    assert st.planes.shape == (3, 128, 3)
    st.reserve(300)                      # more than double: what is needed
    assert st.planes.shape == (3, 300, 3)
    st.reserve(9999)                     # at most every set
    assert st.planes.shape == (3, 4096, 3)


def test_a_state_takes_the_rows_its_geometry_grew_to_at_once_when_it_needs_a_sixteenth_of_them(monkeypatch):
    monkeypatch.setattr(native_lru, "GROWN", {})
    LruState(num_sets=4096, assoc=3).reserve(4096)          # a launch that used every set
    big = LruState(num_sets=4096, assoc=3)
    big.reserve(256)                                        # 256 * 16 >= 4096: all at once
    assert big.planes.shape == (3, 4096, 3)
    small = LruState(num_sets=4096, assoc=3)
    small.reserve(255)                                      # less: what is needed, as a small launch
    assert small.planes.shape == (3, 255, 3)
    other = LruState(num_sets=2048, assoc=3)                # another geometry: its own history
    other.reserve(256)
    assert other.planes.shape == (3, 256, 3)


def test_the_rows_in_use_survive_a_growth():
    st = LruState(num_sets=1024, assoc=2)
    one = np.ones(3, dtype=np.int64)
    keys = np.array([5, 6, 7], dtype=np.int64)
    lru_walk(st, keys, one, one.astype(np.uint8), np.array([1, 2, 3], dtype=np.int64), 0)
    st.reserve(1024)                                        # grown: the three rows copied over
    hit = lru_walk(st, keys, one, one.astype(np.uint8), np.array([1, 2, 3], dtype=np.int64), 3)
    assert hit.tolist() == [1, 1, 1]


def test_a_released_state_holds_only_its_row_numbers_and_takes_planes_again_when_reserved(monkeypatch):
    monkeypatch.setattr(native_lru, "GROWN", {})
    st = LruState(num_sets=1024, assoc=2)
    st.reserve(1024)
    st.release()
    assert st.planes.shape == (3, 0, 2) and st._ptrs is None and st.nbytes == st.row_of.nbytes
    st.reserve(64)                                          # 64 * 16 >= 1024: what it grew to before
    assert st.planes.shape == (3, 1024, 2) and st.nbytes == st.row_of.nbytes + st.planes.nbytes


def test_a_released_state_with_rows_in_use_is_cold():
    st = LruState(num_sets=1024, assoc=2)
    one = np.ones(2, dtype=np.int64)
    keys = np.array([5, 900], dtype=np.int64)
    lru_walk(st, keys, one, one.astype(np.uint8), keys, 0)
    st.release()
    assert not st.row_of.any() and st.meta.tolist() == [0, 0, 0]
    hit = lru_walk(st, keys, one, one.astype(np.uint8), keys, 2)      # misses, as a new state's
    assert hit.tolist() == [0, 0] and st.rows == 2
