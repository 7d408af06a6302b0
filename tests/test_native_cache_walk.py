"""native_cache_walk: loads through L1 then L2 and writes at L2, in issue
order, by hand-worked numbers on the sm_90 preset."""
import numpy as np

from gpuemu.arch import get_preset
from gpuemu.memory import request_table
from gpuemu.memory.cache import SectoredCache
from gpuemu.memory.native_cache_walk import cache_walk
from gpuemu.memory.trace import SPACE_CODES, AccessBatch

P = get_preset("sm_90")
M = P.mem
COL = request_table.COL
GLOBAL, LOCAL = SPACE_CODES["global"], SPACE_CODES["local"]


def _walk(kinds, ops, sectors, sms, with_l1=True, log=None):
    """One global request per entry, each its own MemInstr (table row) with its kind;
    `log`: a list to fill with the walk's prefetch log (cache_walk's prefetch_log)."""
    n = len(kinds)
    l1 = (SectoredCache(M.l1_bytes, M.l1_line_bytes, M.l1_sector_bytes, M.l1_assoc, "L1", partitions=P.num_sms)
          if with_l1 else None)
    l2 = SectoredCache(M.l2_bytes, M.l2_line_bytes, 32, M.l2_assoc, "L2")
    z = np.zeros(n, dtype=np.int32)
    batch = AccessBatch(instr=np.arange(n, dtype=np.int32), mask=np.zeros(n, np.uint32),
                        addr=np.zeros((n, 32), np.int64), space=np.full(n, GLOBAL, np.int8),
                        sm=np.array(sms, dtype=np.int32), block=z, warp=z)
    arrays = request_table.batch_arrays(batch, np.array(ops, dtype=np.int8), np.full(n, 4, np.int64),
                                        np.zeros(n, np.int8))
    start = np.cumsum([0] + [len(s) for s in sectors]).astype(np.int64)
    sec = np.array([x for s in sectors for x in s], dtype=np.int64)
    table = request_table.new_table(n)
    cycles, latency = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    kind = np.full(n * request_table.NSP, -1, dtype=np.int8)
    kind[np.arange(n) * request_table.NSP + GLOBAL] = kinds
    buf = np.zeros(8 * n, dtype=np.int64) if log is not None else None
    logged = cache_walk(arrays, (GLOBAL, LOCAL), start, sec, kind, M, P.num_sms, l1, l2, cycles, latency, table,
                        prefetch_log=buf)
    if log is not None:
        log.extend(buf[:logged].tolist())
    return table[np.arange(n) * request_table.NSP + GLOBAL], cycles, latency, l1, l2


def test_a_second_load_of_the_same_sectors_hits_l1_on_the_same_sm_only():
    four = [100, 101, 102, 103]
    t, cycles, latency, l1, l2 = _walk([0, 0, 0], [0, 0, 0], [four, four, four], [0, 0, 1])
    assert t[0, COL["l1_misses"]] == 4 and t[0, COL["l2_read"]] == 4 and t[0, COL["dram"]] == 4
    assert t[1, COL["l1_hits"]] == 4 and t[1, COL["l2_read"]] == 0
    assert t[2, COL["l1_misses"]] == 4 and t[2, COL["l2_hits"]] == 4     # another SM: its own L1
    assert cycles.tolist() == [4 * M.cycles_per_dram_sector, 4 * M.cycles_per_l1_sector,
                               4 * M.cycles_per_l2_sector]
    assert latency.tolist() == [M.dram_latency, M.l1_hit_latency, M.l2_hit_latency]
    assert (l1.hits, l1.misses, l1._t, l2.hits, l2.misses, l2._t) == (4, 8, 3, 4, 4, 2)


def test_a_store_writes_at_l2_and_a_later_load_there_hits_l2():
    t, cycles, latency, _, l2 = _walk([2, 1], [1, 0], [[7, 8], [8]], [0, 0])
    assert t[0, COL["l2_read"]] == 0 and cycles[0] == 2 * M.cycles_per_l2_sector
    assert t[1, COL["l2_hits"]] == 1 and t[1, COL["dram"]] == 0 and latency[1] == M.l2_hit_latency
    assert l2._t == 3                        # sectors 7 and 8 lie in two 128-byte lines


def _two_passes():
    """40 loads straight to L2, lines 0, 2, ..., 38 (4 sectors each) twice over."""
    return [[8 * (k % 20) + s for s in range(4)] for k in range(40)]


def test_without_l1_loads_read_l2_and_the_second_pass_over_the_same_lines_hits_there():
    # each of the first 20 misses its 4 sectors, each of the rest hits them
    sectors = _two_passes()
    t, cycles, latency, _, l2 = _walk([1] * 40, [0] * 40, sectors, [k % 3 for k in range(40)], with_l1=False)
    assert t[:20, COL["dram"]].tolist() == [4] * 20 and t[20:, COL["l2_hits"]].tolist() == [4] * 20
    assert t[:, COL["l1_hits"]].sum() == t[:, COL["l1_misses"]].sum() == 0
    assert latency.tolist() == [M.dram_latency] * 20 + [M.l2_hit_latency] * 20
    assert (l2.hits, l2.misses, l2._t) == (80, 80, 40)


def test_the_walk_prefetches_the_set_of_the_request_16_ahead_and_the_row_of_the_one_8_ahead():
    from gpuemu.memory.native_cache_walk import PREFETCH_ROW_OF, PREFETCH_ROWS
    # before request i: the row number of request i + 16's L2 set; the tags, valid
    # bits and times of request i + 8's row once its set has one (rows are made
    # in order of first use: line k's, k < 20, is row k; the second pass reuses them)
    n, sectors = 40, _two_passes()
    logged, calls = [], {}
    import gpuemu.memory.native_cache_walk as walk

    def spy(cache, m):
        got = calls[cache.name] = real(cache, m)
        return got
    real, walk._cache_args = walk._cache_args, spy
    try:
        _walk([1] * n, [0] * n, sectors, [0] * n, with_l1=False, log=logged)
    finally:
        walk._cache_args = real
    row_of, tags, valid, last, assoc = calls["L2"][:5]
    l2_sets = calls["L2"][6]
    line = [s[0] // 4 for s in sectors]
    want = []
    for i in range(n):
        j = i + PREFETCH_ROW_OF
        if j < n:
            want.append(row_of + 4 * (line[j] % l2_sets))     # int32 row numbers
        j = i + PREFETCH_ROWS
        if n > j >= 20:                                       # its set has a row: line j - 20's
            at = 8 * (j - 20) * assoc
            want += [tags + at, valid + at, last + at]
    assert logged == want
