"""racecheck: the pair rule, the numpy fast path against the plain-Python
reference, and races in kernels judged by CUDA's rules, not emulation order."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.check.accesses import Rows
from gpuemu.check.message_passing import Acquired, Places, Threads
from gpuemu.check.racecheck import (WarpSyncs, concurrent, find_races, find_races_reference, hazard,
                                     lines_of, syncwarp_orders)
from kernel_launch import launch


def test_different_blocks_are_always_concurrent():
    assert concurrent(0, 0, 0, 0, 1, 1, 0, 0, 0, 2, its=False)


def test_a_barrier_between_two_accesses_orders_them():
    assert not concurrent(0, 0, 0, 0, 1, 0, 1, 1, 0, 2, its=True)


def test_two_warps_in_one_barrier_interval_are_concurrent():
    assert concurrent(0, 3, 0, 0, 1, 0, 3, 1, 0, 2, its=False)


def test_lanes_of_one_warp_are_ordered_in_lock_step_before_sm70():
    assert not concurrent(0, 0, 0, 0, 1, 0, 0, 0, 0, 2, its=False)


def test_lanes_of_one_warp_race_on_sm70_without_syncwarp():
    assert concurrent(0, 0, 0, 5, 1, 0, 0, 0, 5, 2, its=True)
    assert not concurrent(0, 0, 0, 5, 1, 0, 0, 0, 6, 2, its=True)


def test_lanes_of_one_instruction_are_one_access():
    assert not concurrent(0, 0, 0, 0, 7, 0, 0, 0, 0, 7, its=True)


def test_fence_then_atomic_orders_accesses_across_blocks():
    assert not concurrent(0, 0, 0, 0, 1, 1, 0, 0, 0, 2, its=True, released=True)


def test_hazard_kinds_by_order_and_atomics():
    assert hazard(True, False, False, False) == "read-after-write"
    assert hazard(False, False, True, False) == "write-after-read"
    assert hazard(True, False, True, False) == "write-after-write"
    assert hazard(False, False, False, False) is None
    assert hazard(True, True, True, True) is None
    assert hazard(True, True, False, False) == "read-after-write"


def test_finding_line_is_the_write_and_other_line_the_other_access():
    assert lines_of("read-after-write", 5, 9) == (5, 9)
    assert lines_of("write-after-read", 9, 5) == (5, 9)
    assert lines_of("write-after-write", 4, 7) == (7, 4)


def random_rows(rng, n: int) -> Rows:
    seq = np.sort(rng.integers(0, n // 2, n))
    return Rows(seq=seq, block=rng.integers(0, 2, n), warp=rng.integers(0, 2, n),
                lane=rng.integers(0, 3, n), epoch=rng.integers(0, 2, n), wsync=rng.integers(0, 2, n),
                unit=rng.integers(0, 6, n), line=rng.integers(1, 5, n),
                write=rng.random(n) < 0.5, read=rng.random(n) < 0.5, atomic=rng.random(n) < 0.2)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("its", [False, True])
def test_fast_path_agrees_with_the_reference(seed, its):
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, 60)
    rel, acq = rng.random(60) < 0.3, rng.random(60) < 0.3
    for keys in ((rows.block, rows.epoch, rows.unit), (rows.unit,)):
        want = find_races_reference(rows, keys, 64, its, rel, acq)
        got = find_races(rows, keys, 64, its, rel, acq)
        assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}
        assert want   # the random rows do race


def reads_then_a_write(n: int) -> Rows:
    """n reads of one shared unit (line 5), each by lane 0 of its own warp,
    then a write of it (line 9) by one more warp: one barrier interval."""
    k = n + 1
    return Rows(seq=np.arange(k), block=np.zeros(k, int), warp=np.arange(k), lane=np.zeros(k, int),
                epoch=np.zeros(k, int), wsync=np.zeros(k, int), unit=np.zeros(k, int),
                line=np.array([5] * n + [9]), write=np.arange(k) == n,
                read=np.arange(k) < n, atomic=np.zeros(k, bool))


def test_a_write_after_32_reads_races_with_the_earliest_read():
    # the write is past the first GROUP_CAP accesses of the location: it
    # still races, and the earliest read it races with stands for all
    rows = reads_then_a_write(40)
    want = {("write-after-read", 9, 5): [1, 40, 0]}
    assert find_races_reference(rows, (rows.block, rows.epoch, rows.unit), 2048, True) == want
    assert find_races(rows, (rows.block, rows.epoch, rows.unit), 2048, True) == want


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("its", [False, True])
@pytest.mark.parametrize("observed", [False, True])
def test_fast_path_agrees_with_the_reference_past_the_first_32_accesses_of_a_location(seed, its, observed):
    rng = np.random.default_rng(seed)
    n = 300
    # two units: about a hundred accesses each; few blocks, warps and lanes
    # so that the earliest racing access is found at every level
    rows = Rows(seq=np.sort(rng.integers(0, n // 2, n)), block=rng.integers(0, 1 + seed % 2, n),
                warp=rng.integers(0, 1 + seed // 2 % 2, n), lane=rng.integers(0, 1 + seed % 4, n),
                epoch=rng.integers(0, 2, n), wsync=rng.integers(0, 2, n), unit=rng.integers(0, 2, n),
                line=rng.integers(1, 5, n), write=rng.random(n) < 0.1, read=rng.random(n) < 0.5,
                atomic=rng.random(n) < 0.2)
    rel, acq = rng.random(n) < 0.3, rng.random(n) < 0.3
    for keys in ((rows.block, rows.epoch, rows.unit), (rows.unit,)):
        want = find_races_reference(rows, keys, 64, its, rel, acq, observed)
        got = find_races(rows, keys, 64, its, rel, acq, observed)
        assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}


def random_acquired(rng, rows: Rows, pubs: int, reads: int) -> Acquired:
    """Message passing between blocks: a few flags (units 10-12) published
    and read at random seqs by random blocks."""
    top, nb = int(rows.seq.max()) + 1, int(rows.block.max()) + 1
    after = np.where(rng.random(len(rows.seq)) < 0.9, rows.seq + rng.integers(1, 4, len(rows.seq)),
                     np.iinfo(np.int64).max)
    return Acquired(rows.block, rows.seq, after, rng.integers(0, nb, pubs), rng.integers(10, 13, pubs),
                    rng.integers(0, top, pubs), rng.integers(0, nb, reads), rng.integers(10, 13, reads),
                    rng.integers(0, top, reads))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("its", [False, True])
def test_fast_path_agrees_with_the_reference_with_flags_read_per_block(seed, its):
    # message passing judged per pair: past the first 32 accesses of a location
    # too, a later access is compared with the released ones of the blocks it
    # did not acquire from
    rng = np.random.default_rng(seed)
    n = 160
    rows = Rows(seq=np.sort(rng.integers(0, n // 2, n)), block=rng.integers(0, 8, n),
                warp=rng.integers(0, 2, n), lane=rng.integers(0, 2, n), epoch=rng.integers(0, 2, n),
                wsync=rng.integers(0, 2, n), unit=rng.integers(0, 2, n), line=rng.integers(1, 5, n),
                write=rng.random(n) < 0.15, read=rng.random(n) < 0.5, atomic=rng.random(n) < 0.1)
    rel, acq = rng.random(n) < 0.5, random_acquired(rng, rows, 16, 30)
    for keys in ((rows.block, rows.epoch, rows.unit), (rows.unit,)):
        want = find_races_reference(rows, keys, 64, its, rel, acq, True)
        got = find_races(rows, keys, 64, its, rel, acq, True)
        assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}


@pytest.mark.parametrize("flags", [(100, 101, 102), (100, 100, 100)], ids=["a_flag_each", "one_flag"])
def test_a_later_access_races_with_the_released_write_of_a_block_whose_flag_it_did_not_read(flags):
    # blocks 1 and 3 write a location and publish their flags, which block 0
    # reads; 40 reads of the location by block 0; block 2 writes it and
    # publishes a flag block 0 never reads (or one flag of all three, which
    # block 0 read before block 2 published it); a last read by block 0. Past the
    # first 32 accesses, that read is ordered after blocks 1 and 3's writes
    # only: it races with block 2's (the first two released writes, of
    # blocks it acquired from, do not stand for the third)
    k = 44
    block = np.array([1, 3] + [0] * 40 + [2, 0])
    wrote = np.isin(np.arange(k), (0, 1, 42))
    rows = Rows(seq=4 * np.arange(k) + 40, block=block, warp=np.zeros(k, int), lane=np.zeros(k, int),
                epoch=np.zeros(k, int), wsync=np.zeros(k, int), unit=np.zeros(k, int),
                line=np.array([3, 4] + [5] * 40 + [7, 9]), write=wrote, read=~wrote, atomic=np.zeros(k, bool))
    # blocks 1 and 3 publish at seq 45, 46, read by block 0 at 47; block 2 publishes at 209
    acq = Acquired(rows.block, rows.seq, rows.seq + 1, np.array([1, 3, 2]), np.array(flags),
                   np.array([45, 46, 209]), np.array([0, 0]), np.array(flags[:2]), np.array([47, 47]))
    want = find_races_reference(rows, (rows.unit,), 64, True, wrote, acq)
    assert ("read-after-write", 7, 9) in want
    assert ("read-after-write", 3, 5) not in want and ("read-after-write", 4, 5) not in want
    assert {key: v[0] for key, v in find_races(rows, (rows.unit,), 64, True, wrote, acq).items()} == \
        {key: v[0] for key, v in want.items()}


def records_with_flags(rng, agent_is_warp: bool, threaded: bool = False, its: bool = True):
    """Rows as a trace gives them: records (one seq each) of one block, warp,
    line and kind, whose barrier interval grows per block and warp-sync
    interval per warp, 1-3 lanes each; flags published (after a fence after
    the access) and read at random by blocks, or by warps."""
    nrec, nb = int(rng.integers(30, 90)), int(rng.integers(1, 5))
    blk, wrp = rng.integers(0, nb, nrec), rng.integers(0, 3, nrec)
    ep, ws, ecur, wcur = np.zeros(nrec, int), np.zeros(nrec, int), {}, {}
    for i in range(nrec):
        if rng.random() < 0.1:
            ecur[blk[i]] = ecur.get(blk[i], 0) + 1
        if rng.random() < 0.15:
            wcur[blk[i], wrp[i]] = wcur.get((blk[i], wrp[i]), 0) + 1
        ep[i], ws[i] = ecur.get(blk[i], 0), wcur.get((blk[i], wrp[i]), 0)
    line, wr, at = rng.integers(1, 6, nrec), rng.random(nrec) < 0.35, rng.random(nrec) < 0.1
    lanes = rng.integers(1, 4, nrec)
    rec = np.repeat(np.arange(nrec), lanes)
    n = len(rec)
    rows = Rows(seq=rec * 2, block=blk[rec], warp=wrp[rec],
                lane=np.concatenate([rng.choice(4, k, replace=False) for k in lanes]), epoch=ep[rec],
                wsync=ws[rec], unit=rng.integers(0, 1 + nb % 2, n), line=line[rec], write=wr[rec],
                read=~wr[rec] | at[rec], atomic=at[rec])
    agent = rows.block * 3 + rows.warp if agent_is_warp else rows.block
    na, top = int(agent.max()) + 1, int(rows.seq.max()) // 2 + 1
    pubs, reads = int(rng.integers(1, 12)), int(rng.integers(1, 20))
    after = np.where(rng.random(n) < 0.8, rows.seq + 2 * rng.integers(0, 10, n) + 1, np.iinfo(np.int64).max)
    if threaded:      # the reads are some of the rows' records: each judged by what its thread sees
        r = rng.integers(0, n, reads)
        places = Places(rows.warp, rows.lane, rows.epoch, rows.wsync)
        threads = Threads(places, places.at(r), its)
        acq = Acquired(agent, rows.seq, after, rng.integers(0, na, pubs), rng.integers(0, 3, pubs),
                       2 * rng.integers(0, top, pubs) + 1, agent[r], rng.integers(0, 3, reads), rows.seq[r],
                       threads)
    else:
        acq = Acquired(agent, rows.seq, after, rng.integers(0, na, pubs), rng.integers(0, 3, pubs),
                       2 * rng.integers(0, top, pubs) + 1, rng.integers(0, na, reads), rng.integers(0, 3, reads),
                       2 * rng.integers(0, top, reads) + 1)
    return rows, acq, rng.random(n) < 0.6


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("its", [False, True])
def test_fast_path_agrees_with_the_reference_on_records_with_flags_read_by_threads(seed, its):
    rows, acq, rel = records_with_flags(np.random.default_rng(100 + seed), False, True, its)
    for keys in ((rows.unit,), (rows.block, rows.epoch, rows.unit)):
        want = find_races_reference(rows, keys, 128, its, rel, acq, True)
        got = find_races(rows, keys, 128, its, rel, acq, True)
        assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("agent_is_warp", [False, True], ids=["blocks", "warps"])
def test_fast_path_agrees_with_the_reference_on_records_with_flags(seed, agent_is_warp):
    rows, acq, rel = records_with_flags(np.random.default_rng(seed), agent_is_warp)
    for keys in ((rows.unit,), (rows.block, rows.epoch, rows.unit)):
        for its in (False, True):
            want = find_races_reference(rows, keys, 128, its, rel, acq, True)
            got = find_races(rows, keys, 128, its, rel, acq, True)
            assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}


@pytest.mark.parametrize("seed", range(8))
def test_past_the_bound_of_comparisons_a_later_access_keeps_what_the_witnesses_found(seed, monkeypatch):
    # EVERY_EARLIER_PAIRS spent: later rows that read several flags are compared
    # with the witnesses only (the earliest access a later one races with may
    # be missed, and a later one stand for it); every pair found races
    from gpuemu.check import racecheck
    monkeypatch.setattr(racecheck, "EVERY_EARLIER_PAIRS", 7 * seed)
    rows, acq, rel = records_with_flags(np.random.default_rng(seed), False)
    got = find_races(rows, (rows.unit,), 128, True, rel, acq)
    assert got
    for count, a, b in got.values():
        x, y = sorted((a, b), key=lambda i: (int(rows.seq[i]), i))
        pair = np.array([x, y])
        assert racecheck._racing(rows, rows.thread(128), pair[:1], pair[1:], True, rel, acq).all()


def test_a_later_access_races_with_its_blocks_write_whose_flag_its_block_did_not_read():
    # warp 1 writes a location, fences and publishes flag A, writes it again,
    # fences and publishes flag B; block 0 reads flag A; 40 reads of the
    # location by warp 0's lane 0, then a read by it on another line: past the
    # first 32 accesses, that read is ordered after the first write only (the
    # first write of warp 1, ordered, does not stand for the second)
    k = 43
    warp = np.array([1, 1] + [0] * 41)
    wrote = np.arange(k) < 2
    seq = np.array([40, 44] + list(range(48, 48 + 41)))
    rows = Rows(seq=seq, block=np.zeros(k, int), warp=warp, lane=np.zeros(k, int),
                epoch=np.zeros(k, int), wsync=np.zeros(k, int), unit=np.zeros(k, int),
                line=np.array([3, 4] + [5] * 40 + [9]), write=wrote, read=~wrote, atomic=np.zeros(k, bool))
    after = np.where(np.arange(k) == 0, 41, np.where(np.arange(k) == 1, 45, np.iinfo(np.int64).max))
    acq = Acquired(rows.block, rows.seq, after, np.array([0, 0]), np.array([100, 101]), np.array([42, 46]),
                   np.array([0]), np.array([100]), np.array([47]))
    want = find_races_reference(rows, (rows.unit,), 64, True, wrote, acq)
    assert ("read-after-write", 4, 9) in want and ("read-after-write", 3, 9) not in want
    assert {key: v[0] for key, v in find_races(rows, (rows.unit,), 64, True, wrote, acq).items()} == \
        {key: v[0] for key, v in want.items()}


def test_an_atomic_is_ordered_before_a_thread_that_later_made_an_atomic_of_the_location():
    # the last-block pattern: blocks 0-2 each atomicInc a counter (line 4),
    # block 2's thread, whose atomic came last, then resets it (line 8)
    k = 4
    rows = Rows(seq=np.arange(k), block=np.array([0, 1, 2, 2]), warp=np.zeros(k, int),
                lane=np.zeros(k, int), epoch=np.zeros(k, int), wsync=np.zeros(k, int),
                unit=np.zeros(k, int), line=np.array([4, 4, 4, 8]), write=np.ones(k, bool),
                read=np.array([True, True, True, False]), atomic=np.arange(k) < 3)
    for find in (find_races_reference, find_races):
        assert find(rows, (rows.unit,), 32, True, observed=True) == {}
        assert find(rows, (rows.unit,), 32, True) == {("write-after-write", 8, 4): [2, 3, 0]}


def test_a_strong_read_orders_no_other_threads_read_before_the_readers_write():
    # block 0 reads a flag with a volatile load (line 4); block 1 reads it so
    # too, then stores to it (line 8): block 0's read saw nothing of block
    # 1's, the store races with it
    k = 3
    rows = Rows(seq=np.arange(k), block=np.array([0, 1, 1]), warp=np.zeros(k, int),
                lane=np.zeros(k, int), epoch=np.zeros(k, int), wsync=np.zeros(k, int),
                unit=np.zeros(k, int), line=np.array([4, 4, 8]), write=np.array([False, False, True]),
                read=np.array([True, True, False]), atomic=np.array([True, True, False]))
    for find in (find_races_reference, find_races):
        assert find(rows, (rows.unit,), 32, True, observed=True) == {("write-after-read", 8, 4): [1, 2, 0]}


def test_syncwarp_orders_only_the_lanes_its_mask_names():
    halves = [0x0000FFFF] * 16 + [0xFFFF0000] * 16
    assert syncwarp_orders(0xFFFFFFFF, halves, 0, 15)
    assert not syncwarp_orders(0xFFFFFFFF, halves, 0, 16)
    # lanes 0-15 call __syncwarp(0xffffffff) in one branch: lane 16 calls it in the other
    assert syncwarp_orders(0x0000FFFF, [0xFFFFFFFF] * 32, 0, 16)
    # a call neither lane makes orders neither
    assert not syncwarp_orders(0x0000FFFF, [0xFFFFFFFF] * 32, 16, 17)


def one_warp_store_then_load(syncs) -> dict:
    """Lane 0 stores unit 0 (line 4), a __syncwarp (call 1), lane 16 loads
    it (line 7); per finder, its findings."""
    rows = Rows(seq=np.arange(2), block=np.zeros(2, int), warp=np.zeros(2, int), lane=np.array([0, 16]),
                epoch=np.zeros(2, int), wsync=np.array([0, 1]), unit=np.zeros(2, int),
                line=np.array([4, 7]), write=np.array([True, False]), read=np.array([False, True]),
                atomic=np.zeros(2, bool))
    return {f.__name__: f(rows, (rows.block, rows.epoch, rows.unit), 32, True, syncs=syncs)
            for f in (find_races_reference, find_races)}


def syncs_of(masks: list) -> WarpSyncs:
    """Call 1 of warp 0 of block 0, by the whole warp, lane l passing masks[l]."""
    s = WarpSyncs()
    s.add(np.zeros(1, int), np.zeros(1, int), np.ones(1, int), np.array([0xFFFFFFFF], np.uint32),
          np.array([masks], np.uint32), np.array([0xFFFFFFFF]))
    return s


def test_a_syncwarp_of_the_whole_warp_orders_its_lanes():
    assert one_warp_store_then_load(syncs_of([0xFFFFFFFF] * 32)) == {
        "find_races_reference": {}, "find_races": {}}


def test_a_syncwarp_of_each_half_leaves_the_halves_racing():
    want = {("read-after-write", 4, 7): [1, 0, 1]}
    assert one_warp_store_then_load(syncs_of([0x0000FFFF] * 16 + [0xFFFF0000] * 16)) == {
        "find_races_reference": want, "find_races": want}


@pytest.mark.parametrize("seed", range(10))
def test_fast_path_agrees_with_the_reference_on_partial_syncwarps(seed):
    rng = np.random.default_rng(seed)
    n = (40, 150, 300)[seed % 3]
    warps = 1 + seed % 2
    rows = Rows(seq=np.sort(rng.integers(0, n // 2, n)), block=rng.integers(0, 2, n),
                warp=rng.integers(0, warps, n), lane=rng.integers(0, 6, n), epoch=rng.integers(0, 2, n),
                wsync=rng.integers(0, 4, n), unit=rng.integers(0, 2, n), line=rng.integers(1, 5, n),
                write=rng.random(n) < 0.2, read=rng.random(n) < 0.5, atomic=rng.random(n) < 0.1)
    # calls 1-3 of every warp, a few missing, some by part of the warp or naming part of it
    b, w, k = (a.ravel() for a in np.meshgrid(np.arange(2), np.arange(warps), np.arange(1, 4), indexing="ij"))
    m = len(b)
    on = rng.random(m) < 0.9
    active = np.where(rng.random(m) < 0.4, 0xFFFFFFFF, rng.choice([0x3F, 0x7, 0x38, 0x15], m))
    masks = np.where(rng.random((m, 32)) < 0.5, 0xFFFFFFFF, rng.choice([0x3F, 0x7, 0x38, 0x2A], (m, 32)))
    syncs = WarpSyncs()
    syncs.add(b[on], w[on], k[on], active[on].astype(np.uint32), masks[on].astype(np.uint32),
              np.full(int(on.sum()), 0xFFFFFFFF))
    for keys in ((rows.block, rows.epoch, rows.unit), (rows.unit,)):
        want = find_races_reference(rows, keys, 64, True, syncs=syncs)
        got = find_races(rows, keys, 64, True, syncs=syncs)
        assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}


WARP_SWAP = r"""
    extern "C" __global__ void k(int* out) {
        __shared__ int s[32];
        int t = threadIdx.x;
        s[t] = t;
        out[t] = s[t ^ 1];
    }"""


def test_missing_syncwarp_is_a_race_on_sm90_even_when_the_result_is_right():
    out = np.zeros(32, np.int32)
    mod = gpuemu.RawModule(code=WARP_SWAP, arch="sm_90")
    la = mod.get_function("k")(1, 32, (out,), check=["race"])
    np.testing.assert_array_equal(out, np.arange(32) ^ 1)
    [f] = la.findings
    assert (f.kind, f.line, f.other_line, f.space) == ("race", 5, 6, "shared")
    assert f.extra["hazard"] == "read-after-write" and f.extra["count"] >= 1
    assert f.thread != f.other_thread


def test_the_same_warp_synchronous_code_is_no_race_in_lock_step_on_sm60():
    mod = gpuemu.RawModule(code=WARP_SWAP, arch="sm_60")
    la = mod.get_function("k")(1, 32, (np.zeros(32, np.int32),), check=["race"])
    assert la.findings == []


def test_race_is_reported_once_per_pair_of_lines_with_a_count():
    src = r"""
    extern "C" __global__ void k(int* out) {
        __shared__ int s[256];
        int t = threadIdx.x;
        s[t] = t;
        out[t] = s[255 - t];
    }"""
    la = launch(src, "k", 1, 256, np.zeros(256, np.int32), check=True)
    races = [f for f in la.findings if f.kind == "race"]
    assert len({(f.line, f.other_line, f.extra["hazard"]) for f in races}) == len(races)
    assert sum(f.extra["count"] for f in races) >= 128


def test_racecheck_off_reports_nothing():
    src = r"""
    extern "C" __global__ void k(int* out) {
        __shared__ int s[64];
        s[threadIdx.x] = 1;
        out[threadIdx.x] = s[63 - threadIdx.x];
    }"""
    la = launch(src, "k", 1, 64, np.zeros(64, np.int32))
    assert la.findings == []


def test_unknown_check_tool_is_a_launch_error():
    with pytest.raises(gpuemu.LaunchError, match="unknown check tool"):
        launch('extern "C" __global__ void k(int* o) { o[0] = 1; }', "k", 1, 1,
               np.zeros(1, np.int32), check=["racecheckz"])


def race_lines(findings) -> set:
    return {(f.line, f.other_line, f.space) for f in findings if f.kind == "race"}


def test_a_shared_value_read_by_a_whole_block_then_overwritten_races():
    src = r"""
    extern "C" __global__ void k(int* o) {
        __shared__ int total;
        if (threadIdx.x == 0) total = 5;
        __syncthreads();
        int v = total;
        if (threadIdx.x == blockDim.x - 1) total = 7;
        o[threadIdx.x] = v;
    }"""
    la = launch(src, "k", 1, 1024, np.zeros(1024, np.int32), check=["race"])
    assert (7, 6, "shared") in race_lines(la.findings)


def test_a_warp_reading_a_location_in_a_loop_races_with_another_warps_write():
    src = r"""
    extern "C" __global__ void k(int* o, int n) {
        __shared__ int s[32];
        if (threadIdx.x == 0) s[0] = 0;
        __syncthreads();
        int acc = 0;
        if (threadIdx.x < 32) {
            for (int i = 0; i < n; i++) acc += s[0];
        } else if (threadIdx.x == 32) {
            s[0] = 1;
        }
        o[threadIdx.x] = acc;
    }"""
    la = launch(src, "k", 1, 64, np.zeros(64, np.int32), np.int32(40), check=["race"])
    assert (10, 8, "shared") in race_lines(la.findings)


def test_a_global_value_read_by_64_blocks_then_overwritten_by_the_last_races():
    src = r"""
    extern "C" __global__ void k(int* g, int* o) {
        int v = g[0];
        o[blockIdx.x * blockDim.x + threadIdx.x] = v;
        if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) g[0] = 7;
    }"""
    la = launch(src, "k", 64, 32, np.zeros(1, np.int32), np.zeros(64 * 32, np.int32), check=["race"])
    assert (5, 3, "global") in race_lines(la.findings)


HALF_SYNCWARP = r"""
    extern "C" __global__ void k(int* out) {
        __shared__ int s[32];
        int t = threadIdx.x;
        s[t] = t;
        __syncwarp(t < 16 ? 0x0000ffffu : 0xffff0000u);
        out[t] = s[t ^ OTHER];
    }"""


def test_reading_the_other_half_after_a_half_warp_syncwarp_races():
    la = launch(HALF_SYNCWARP.replace("OTHER", "16"), "k", 1, 32, np.zeros(32, np.int32), check=["race"])
    assert race_lines(la.findings) == {(5, 7, "shared")}


def test_reading_ones_own_half_after_a_half_warp_syncwarp_is_no_race():
    la = launch(HALF_SYNCWARP.replace("OTHER", "1"), "k", 1, 32, np.zeros(32, np.int32), check=["race"])
    assert la.findings == []


TILE_SYNC = r"""
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    extern "C" __global__ void k(int* out) {
        __shared__ int s[64];
        cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
        int t = threadIdx.x;
        s[t] = t;
        tile.sync();
        out[t] = s[t ^ OTHER];
    }"""


def test_reading_another_tile_after_tile_sync_races():
    la = launch(TILE_SYNC.replace("OTHER", "16"), "k", 1, 64, np.zeros(64, np.int32), check=["race"])
    assert race_lines(la.findings) == {(8, 10, "shared")}


def test_reading_ones_own_tile_after_tile_sync_is_no_race():
    la = launch(TILE_SYNC.replace("OTHER", "1"), "k", 1, 64, np.zeros(64, np.int32), check=["race"])
    assert la.findings == []
