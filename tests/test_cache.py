"""The sectored LRU cache model: hits, sector fills, LRU eviction, no-allocate."""
import numpy as np

from gpuemu.memory.cache import SectoredCache, popcount


def invalidate(cache: SectoredCache, lines, partition=None) -> None:
    """Drop these lines from `cache` (the ways in use stay a row's first:
    native_lru's rule), as a write-around L1 would; the machine never
    does, the tests make rows with a gap-free empty way this way."""
    keys = np.asarray(lines, dtype=np.int64)
    if partition is not None:
        keys = keys * cache.partitions + np.asarray(partition, dtype=np.int64)
    if keys.size == 0:
        return
    st = cache.lru_state()
    tags = st.planes[0]
    for key, s in zip(keys.tolist(), cache._set_of(keys).tolist()):
        row = int(st.row_of[s]) - 1
        if row < 0:                          # a set never used holds nothing
            continue
        used = cache.assoc
        for w in range(cache.assoc):         # the ways in use come first (native_lru)
            if tags[row, w] == -1:
                used = w
                break
        hit = np.flatnonzero(tags[row, :used] == key)
        if hit.size:                          # close the gap: the ways in use stay first
            w = int(hit[0])
            st.planes[:, row, w:used - 1] = st.planes[:, row, w + 1:used].copy()
            tags[row, used - 1] = -1


def small():
    # 2 sets x 2 ways of 128-byte lines with 32-byte sectors
    return SectoredCache(512, 128, 32, 2)


def test_first_touch_misses_and_second_hits():
    c = small()
    assert c.access(np.array([0]), np.array([0b1])).tolist() == [0]
    assert c.access(np.array([0]), np.array([0b1])).tolist() == [0b1]
    assert (c.hits, c.misses) == (1, 1)


def test_miss_fills_only_requested_sectors():
    c = small()
    c.access(np.array([0]), np.array([0b0011]))
    assert c.access(np.array([0]), np.array([0b1111])).tolist() == [0b0011]


def test_lru_evicts_least_recently_used_line_of_the_set():
    c = small()                          # lines 0, 2, 4 map to set 0
    c.access(np.array([0, 2, 0, 4]), np.ones(4, dtype=np.int64))   # 4 evicts 2 (0 was reused)
    assert c.access(np.array([0]), np.array([1])).tolist() == [1]
    assert c.access(np.array([2]), np.array([1])).tolist() == [0]


def test_other_sets_are_unaffected():
    c = small()
    c.access(np.array([1, 0, 2, 4]), np.ones(4, dtype=np.int64))
    assert c.access(np.array([1]), np.array([1])).tolist() == [1]


def test_no_allocate_access_leaves_cache_unchanged():
    c = small()
    c.access(np.array([0]), np.array([1]), allocate=False)
    assert c.access(np.array([0]), np.array([1])).tolist() == [0]


def test_split_maps_sectors_to_lines_and_bits():
    c = small()
    lines, bits = c.split(np.array([0, 5, 7]))
    assert lines.tolist() == [0, 1, 1] and bits.tolist() == [1, 2, 8]


def test_popcount():
    assert popcount(np.array([0, 1, 0b1011, 0xFFFF])).tolist() == [0, 1, 3, 16]


def test_geometry_sets_from_size():
    c = SectoredCache(50 * 1024 * 1024, 128, 32, 16)
    assert c.num_sets == 50 * 1024 * 1024 // (128 * 16)


from hypothesis import given, settings, strategies as st  # noqa: E402

from gpuemu.memory.cache import lru_reference  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(calls=st.lists(st.lists(st.tuples(st.integers(0, 23), st.integers(1, 15)),
                               min_size=1, max_size=30), min_size=1, max_size=5),
       assoc=st.sampled_from([1, 2, 4]))
def test_batched_access_agrees_with_reference_lru(calls, assoc):
    c = SectoredCache(4 * 128 * assoc, 128, 32, assoc)       # 4 sets
    got = []
    for call in calls:
        got += c.access(np.array([l for l, _ in call]), np.array([b for _, b in call])).tolist()
    flat = [x for call in calls for x in call]
    assert got == lru_reference([l for l, _ in flat], [b for _, b in flat], 4, assoc)


@settings(max_examples=100, deadline=None)
@given(calls=st.lists(st.lists(st.tuples(st.integers(0, 15), st.integers(1, 15), st.integers(0, 2)),
                               min_size=1, max_size=30), min_size=1, max_size=4))
def test_partitions_behave_as_independent_caches(calls):
    c = SectoredCache(2 * 128 * 2, 128, 32, 2, partitions=3)          # 2 sets x 2 ways each
    got = []
    for call in calls:
        a = np.array(call)
        got += list(zip(a[:, 2].tolist(), c.access(a[:, 0], a[:, 1], True, a[:, 2]).tolist()))
    flat = [x for call in calls for x in call]
    for part in range(3):
        mine = [(l, b) for l, b, p in flat if p == part]
        ref = lru_reference([l for l, _ in mine], [b for _, b in mine], 2, 2)
        assert [h for p, h in got if p == part] == ref


@settings(max_examples=150, deadline=None)
@given(calls=st.lists(st.lists(st.tuples(st.integers(0, 23), st.integers(1, 15), st.booleans()),
                               min_size=1, max_size=30), min_size=1, max_size=4),
       assoc=st.sampled_from([1, 2, 4]))
def test_no_allocate_entries_agree_with_reference_lru(calls, assoc):
    c = SectoredCache(4 * 128 * assoc, 128, 32, assoc)       # 4 sets
    got = []
    for call in calls:
        a = np.array(call, dtype=np.int64)
        got += c.access(a[:, 0], a[:, 1], a[:, 2].astype(bool)).tolist()
    flat = [x for call in calls for x in call]
    assert got == lru_reference([x[0] for x in flat], [x[1] for x in flat], 4, assoc,
                                [bool(x[2]) for x in flat])


def test_hits_and_misses_count_sectors():
    c = small()
    c.access(np.array([0, 0]), np.array([0b0011, 0b0110]))   # 2 misses, then 1 hit + 1 miss
    assert (c.hits, c.misses) == (1, 3)


def test_invalidate_drops_the_line_only():
    c = small()
    c.access(np.array([0, 1]), np.array([1, 1]))
    invalidate(c, np.array([0]))
    assert c.access(np.array([0, 1]), np.array([1, 1])).tolist() == [0, 1]


def test_a_cache_whose_state_is_released_is_cold_and_holds_only_its_sets_row_numbers():
    c = SectoredCache(50 * 1024 * 1024, 128, 32, 16, partitions=4)
    lines, ones, parts = np.arange(0, 4000, 7), np.ones(572, dtype=np.int64), np.arange(572) % 4
    first = c.access(lines, ones, True, parts)
    c.release_state()
    assert c.sets_in_use == 0 and c.lru_state().nbytes == c.lru_state().row_of.nbytes
    assert (c.hits, c.misses) == (0, 0)
    again = c.access(lines, ones, True, parts)          # misses as a new cache's first look-ups
    assert again.tolist() == first.tolist() == [0] * 572 and (c.hits, c.misses) == (0, 572)


def test_state_is_kept_only_for_the_sets_looked_up():
    c = SectoredCache(50 * 1024 * 1024, 128, 32, 16, partitions=4)   # 24576 sets x 4
    c.access(np.array([7, 7, 9]), np.ones(3, dtype=np.int64), True, np.array([0, 1, 0]))
    assert c.sets_in_use == 3


def test_invalidate_of_a_set_never_looked_up_changes_nothing():
    c = small()
    c.access(np.array([0]), np.array([1]))
    invalidate(c, np.array([1, 3]))
    assert c.access(np.array([0, 1]), np.array([1, 1])).tolist() == [1, 0]


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.lists(st.tuples(st.integers(0, 2000), st.integers(1, 15)),
                               min_size=1, max_size=200), min_size=1, max_size=4))
def test_many_sets_first_used_in_any_order_agree_with_reference_lru(calls):
    c = SectoredCache(256 * 128 * 2, 128, 32, 2)              # 256 sets, state grown on use
    got = []
    for call in calls:
        got += c.access(np.array([l for l, _ in call]), np.array([b for _, b in call])).tolist()
    flat = [x for call in calls for x in call]
    assert got == lru_reference([l for l, _ in flat], [b for _, b in flat], 256, 2)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.lists(st.tuples(st.integers(0, 23), st.integers(1, 15)),
                                                          min_size=1, max_size=12)),
                      min_size=1, max_size=8),
       assoc=st.sampled_from([1, 2, 4]))
def test_lines_invalidated_anywhere_in_a_set_are_gone_and_the_rest_keep_their_lru_order(steps, assoc):
    c = SectoredCache(4 * 128 * assoc, 128, 32, assoc)       # 4 sets
    ref = [[] for _ in range(4)]                              # per set: [line, valid bits], most recent last
    for dropped, call in steps:
        lines = np.array([line for line, _ in call])
        if dropped:
            invalidate(c, lines)
            for line in lines.tolist():
                ref[line % 4] = [e for e in ref[line % 4] if e[0] != line]
            continue
        got = c.access(lines, np.array([b for _, b in call])).tolist()
        want = []
        for line, b in call:
            ways = ref[line % 4]
            entry = next((e for e in ways if e[0] == line), None)
            want.append(entry[1] & b if entry else 0)
            if entry:
                ways.remove(entry)
                entry[1] |= b
            elif len(ways) == assoc:
                ways.pop(0)
            ways.append(entry or [line, b])
        assert got == want


def test_a_cache_state_made_after_another_died_writes_into_its_storage_not_fresh_memory():
    # native_lru's planes come from record_pool: a launch's caches reuse the last launch's pages
    import gc
    from gpuemu.memory.native_lru import LruState, lru_walk
    from gpuemu.timing import record_pool
    gc.collect()
    record_pool.clear()
    first = LruState(num_sets=512, assoc=4)
    first.reserve(512)
    first.planes[:] = 7                       # what the storage holds when it is given back
    storage = first.planes.ctypes.data
    del first
    gc.collect()
    pooled = record_pool.free_bytes()
    assert pooled >= 3 * 512 * 4 * 8
    second = LruState(num_sets=512, assoc=4)
    second.reserve(512)
    assert second.planes.ctypes.data == storage and second.planes.shape == (3, 512, 4)
    assert record_pool.free_bytes() < pooled          # taken from the pool
    # and it is a cold cache all the same: key 7 in set 3 misses, then hits its sector bits
    one = np.ones(2, dtype=np.int64)
    hit = lru_walk(second, np.array([7, 7]), np.array([0b11, 0b11]), one.astype(np.uint8), 3 * one, 0)
    assert hit.tolist() == [0, 0b11]
