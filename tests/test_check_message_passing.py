"""message_passing: the acquire side per pair of accesses (a consumer is
ordered after the producers whose flags it read, each published after the
producer's access and its fence), the numpy path against the plain-Python
rule."""
from __future__ import annotations

import numpy as np
import pytest

from gpuemu.check.message_passing import (Acquired, Places, Threads, fence_releasing, fence_releasing_reference,
                                          first_fence_after, ordered, ordered_one)

NONE = np.iinfo(np.int64).max
a = np.array


def two_producers() -> Acquired:
    """Rows 0, 1: agents 0 and 1 write their data (seq 0, 1) and fence (seq
    2); they publish flags 10 and 11 (seq 3, 4); agent 2 reads flag 10 (seq
    5); row 2: agent 2 reads the data (seq 6)."""
    return Acquired(agent=a([0, 1, 2]), seq=a([0, 1, 6]), after=a([2, 2, NONE]),
                    pub_agent=a([0, 1]), pub_flag=a([10, 11]), pub_seq=a([3, 4]),
                    read_agent=a([2]), read_flag=a([10]), read_seq=a([5]))


def test_a_consumer_is_ordered_after_the_producer_whose_flag_it_read():
    assert two_producers().pairs(a([0]), a([2])).tolist() == [True]


def test_a_consumer_is_not_ordered_after_a_producer_whose_flag_it_did_not_read():
    assert two_producers().pairs(a([1]), a([2])).tolist() == [False]


def test_a_read_of_the_flag_before_it_was_published_acquires_nothing():
    acq = Acquired(agent=a([0, 1]), seq=a([0, 9]), after=a([1, NONE]), pub_agent=a([0]), pub_flag=a([10]),
                   pub_seq=a([5]), read_agent=a([1]), read_flag=a([10]), read_seq=a([4]))
    assert acq.pairs(a([0]), a([1])).tolist() == [False]
    assert acq.any.tolist() == [False, False]


def test_an_access_before_the_flag_read_acquires_nothing():
    acq = Acquired(agent=a([0, 1]), seq=a([0, 3]), after=a([1, NONE]), pub_agent=a([0]), pub_flag=a([10]),
                   pub_seq=a([2]), read_agent=a([1]), read_flag=a([10]), read_seq=a([4]))
    assert acq.pairs(a([0]), a([1])).tolist() == [False]


def test_a_flag_published_before_the_access_was_fenced_orders_nothing():
    # agent 0 publishes flag 10 (seq 1), then writes (seq 2) and fences (seq
    # 3) and publishes nothing more; agent 1 reads flag 10 (seq 4): it saw a
    # publication from before the write
    acq = Acquired(agent=a([0, 1]), seq=a([2, 9]), after=a([3, NONE]), pub_agent=a([0]), pub_flag=a([10]),
                   pub_seq=a([1]), read_agent=a([1]), read_flag=a([10]), read_seq=a([4]))
    assert acq.pairs(a([0]), a([1])).tolist() == [False]


def test_a_later_publication_of_the_same_flag_orders_the_access():
    # as above, then agent 0 publishes flag 10 again (seq 5), read at seq 6
    acq = Acquired(agent=a([0, 1]), seq=a([2, 9]), after=a([3, NONE]), pub_agent=a([0, 0]),
                   pub_flag=a([10, 10]), pub_seq=a([1, 5]), read_agent=a([1, 1]), read_flag=a([10, 10]),
                   read_seq=a([4, 6]))
    assert acq.pairs(a([0]), a([1])).tolist() == [True]


def test_a_flag_handed_down_a_chain_orders_the_first_agents_access_before_the_last_ones():
    # agent 0 writes (seq 0), fences (1), publishes flag 10 (2); agent 1 reads
    # it (3) and publishes flag 11 (4); agent 2 reads flag 11 (5), then row 1
    # (seq 6): happens-before is transitive
    acq = Acquired(agent=a([0, 2]), seq=a([0, 6]), after=a([1, NONE]), pub_agent=a([0, 1]),
                   pub_flag=a([10, 11]), pub_seq=a([2, 4]), read_agent=a([1, 2]), read_flag=a([10, 11]),
                   read_seq=a([3, 5]))
    assert acq.handed.tolist() == [False, True]
    assert acq.pairs(a([0]), a([1])).tolist() == [True] and acq.pair_reference(0, 1)


def test_an_agent_that_read_only_its_own_flag_hands_nothing_on():
    # agent 1 publishes flag 11 (2) and reads it back (3), publishes flag 12
    # (4); agent 2 reads flag 12 (5): agent 1 is no relay, and agent 0's write
    # (seq 0, fence 1, no flag) is not ordered before row 1 (seq 6)
    acq = Acquired(agent=a([0, 2]), seq=a([0, 6]), after=a([1, NONE]), pub_agent=a([1, 1]),
                   pub_flag=a([11, 12]), pub_seq=a([2, 4]), read_agent=a([1, 2]), read_flag=a([11, 12]),
                   read_seq=a([3, 5]))
    assert acq.handed.tolist() == [False, False]
    assert acq.pairs(a([0]), a([1])).tolist() == [False] and not acq.pair_reference(0, 1)


def test_a_publication_and_its_own_read_of_one_atomic_acquire_nothing():
    # an atomicAdd on the flag is a strong write and a strong read at one seq:
    # it does not observe itself
    acq = Acquired(agent=a([0, 0]), seq=a([0, 9]), after=a([1, NONE]), pub_agent=a([0]), pub_flag=a([10]),
                   pub_seq=a([8]), read_agent=a([0]), read_flag=a([10]), read_seq=a([8]))
    assert acq.pairs(a([0]), a([1])).tolist() == [False]


def test_the_first_fence_after_an_access_is_its_agents():
    fkey = np.sort(a([0 * 100 + 5, 1 * 100 + 3, 1 * 100 + 8]))
    assert first_fence_after(fkey, 100, a([0, 1, 1, 0]), a([2, 3, 9, 5])).tolist() == [5, 8, NONE, NONE]


def test_ordered_needs_the_release_side_too():
    acq = two_producers()
    assert ordered(a([False, True, False]), acq, a([0]), a([2])).tolist() == [False]
    assert ordered(a([True, True, False]), acq, a([0]), a([2])).tolist() == [True]


def random_pattern(rng, n: int, agents: int, flags: int, pubs: int, reads: int) -> Acquired:
    seq = rng.integers(0, 40, n)
    after = np.where(rng.random(n) < 0.8, seq + rng.integers(1, 8, n), NONE)
    return Acquired(agent=rng.integers(0, agents, n), seq=seq, after=after,
                    pub_agent=rng.integers(0, agents, pubs), pub_flag=rng.integers(0, flags, pubs) * 8,
                    pub_seq=rng.integers(0, 40, pubs), read_agent=rng.integers(0, agents, reads),
                    read_flag=rng.integers(0, flags + 1, reads) * 8, read_seq=rng.integers(0, 40, reads))


@pytest.mark.parametrize("seed", range(10))
def test_pairs_agree_with_the_plain_python_rule(seed):
    rng = np.random.default_rng(seed)
    acq = random_pattern(rng, 40, 1 + seed % 5, 1 + seed % 3, 8, 14)
    x, y = np.meshgrid(np.arange(40), np.arange(40))
    x, y = x.ravel(), y.ravel()
    got = acq.pairs(x, y)
    want = [acq.pair_reference(int(i), int(j)) for i, j in zip(x, y)]
    assert got.tolist() == want
    assert got.any()       # the random patterns do order some pairs
    # `any` marks every row some pair orders
    assert not (got & ~acq.any[y]).any()


def test_ordered_one_is_ordered_of_one_pair():
    rng = np.random.default_rng(3)
    acq = random_pattern(rng, 30, 3, 2, 5, 10)
    release = rng.random(30) < 0.5
    x, y = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    assert ordered(release, acq, x, y).tolist() == [ordered_one(release, acq, int(i), int(j))
                                                    for i, j in zip(x, y)]


@pytest.mark.parametrize("seed", range(6))
def test_reads_before_count_the_flags_read_and_give_the_one_flags_latest_read(seed):
    # y's agent acquires from x where x's agent published a flag after x's
    # fence and before y's agent's latest read of it before y
    rng = np.random.default_rng(seed)
    acq = random_pattern(rng, 30, 4, 3, 8, 14)
    count, flag, latest = acq.reads_before(np.arange(30))
    published = set(np.asarray(acq.published[1]).tolist())
    reads = list(zip(*(np.asarray(a).tolist() for a in acq.reads)))
    for y in range(30):
        seen = {f for a, f, t in reads if a == acq.agent[y] and t < acq.seq[y] and f in published}
        assert count[y] == len(seen)
        if count[y] == 1:
            (f,) = seen
            assert acq._flags[flag[y]] == f
            assert latest[y] == max(t for a, g, t in reads if a == acq.agent[y] and g == f and t < acq.seq[y])
            for x in range(30):
                pub = acq.publication_after(acq.agent[x:x + 1], flag[y:y + 1], acq.after[x:x + 1])
                assert acq.pair_reference(x, y) == bool(acq.handed[y] or pub[0] < latest[y])
        if count[y] == 0:
            assert not any(acq.pair_reference(x, y) for x in range(30))


@pytest.mark.parametrize("seed", range(6))
def test_the_first_read_of_any_flag_comes_no_later_than_of_the_flags_published(seed):
    # past FLAGS_AT_ONCE lookups a reader is taken as ordered from its first
    # read of any flag after the writer's publication: a race may be missed,
    # none made up
    rng = np.random.default_rng(seed)
    acq = random_pattern(rng, 30, 4, 3, 10, 16)
    x, ra = rng.integers(0, 30, 200), rng.integers(0, 4, 200)
    wa, after = acq.agent[x], acq.after[x]
    exact = acq.first_read_after(acq._reads, x, ra)
    coarse = acq._first_read_after_any_flag(acq._reads, wa, after, ra)
    assert (coarse <= exact).all() and (coarse < exact).any()
    # the rule in plain Python: the writer's first publication after `after`,
    # then the reader's first read of a published flag after it
    pubs = list(zip(*(np.asarray(a).tolist() for a in acq.published)))
    flags = {f for _, f, _ in pubs}
    reads = [(a, s) for a, f, s in zip(*(np.asarray(a).tolist() for a in acq.reads)) if f in flags]
    for w, t, r, got in zip(wa.tolist(), after.tolist(), ra.tolist(), coarse.tolist()):
        p = min((s for a, _, s in pubs if a == w and s > t), default=None)
        want = min((s for a, s in reads if a == r and p is not None and s > p), default=NONE)
        assert got == want


def test_more_lookups_than_flags_at_once_ask_for_any_flag(monkeypatch):
    import gpuemu.check.message_passing as mp
    rng = np.random.default_rng(1)
    acq = random_pattern(rng, 30, 4, 3, 10, 16)
    x, ra = rng.integers(0, 30, 50), rng.integers(0, 4, 50)
    monkeypatch.setattr(mp, "FLAGS_AT_ONCE", 0)
    assert acq.first_read_after(acq._reads, x, ra).tolist() == \
        acq._first_read_after_any_flag(acq._reads, acq.agent[x], acq.after[x], ra).tolist()


def test_pairs_whose_keys_do_not_fit_one_int64_give_the_same_answers(monkeypatch):
    import gpuemu.check.message_passing as mp
    acq = random_pattern(np.random.default_rng(4), 40, 4, 3, 8, 14)
    x, y = (g.ravel() for g in np.meshgrid(np.arange(40), np.arange(40)))
    want = acq.pairs(x, y).tolist()
    monkeypatch.setattr(mp, "KEY_BITS", 0)
    assert acq.pairs(x, y).tolist() == want and any(want)


def fences_of(*rows) -> tuple:
    """fence_releasing's fences from (block, seq, warp, lanes, interval, warp-sync interval) rows."""
    return tuple(np.array(c) for c in zip(*rows))


def test_a_fence_orders_the_accesses_of_the_thread_that_made_it():
    fences = fences_of((0, 5, 0, 0b1, 0, 0))          # lane 0 of warp 0
    got = fence_releasing(fences, a([0, 0]), a([0, 0]), a([0, 3]), a([0, 0]), a([0, 0]), a([2, 2]), True)
    assert got.tolist() == [5, NONE]                   # lane 3's access: no __syncwarp between


def test_a_fence_after_a_barrier_orders_every_thread_of_the_block():
    fences = fences_of((0, 9, 1, 0b1, 1, 0))          # warp 1's lane 0, after a __syncthreads
    got = fence_releasing(fences, a([0, 1]), a([0, 0]), a([7, 7]), a([0, 0]), a([0, 0]), a([2, 2]), True)
    assert got.tolist() == [9, NONE]                   # another block's access: no


def test_a_fence_after_a_syncwarp_orders_the_warps_other_lanes():
    fences = fences_of((0, 5, 0, 0b1, 0, 1))
    got = fence_releasing(fences, a([0, 0]), a([0, 1]), a([3, 3]), a([0, 0]), a([0, 0]), a([2, 2]), True)
    assert got.tolist() == [5, NONE]                   # warp 1's lane 3: another warp, no barrier


def test_a_warp_in_lock_step_is_ordered_by_any_of_its_lanes_fence():
    fences = fences_of((0, 5, 0, 0b1, 0, 0))
    assert fence_releasing(fences, a([0]), a([0]), a([3]), a([0]), a([0]), a([2]), False).tolist() == [5]


@pytest.mark.parametrize("its", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_fence_releasing_agrees_with_the_plain_rule(seed, its):
    # barrier and warp-sync intervals grow with the seq, as a trace's do
    rng = np.random.default_rng(seed)
    nf, n = 25, 60
    fs, sq = rng.integers(0, 50, nf), rng.integers(0, 50, n)
    fences = (rng.integers(0, 3, nf), fs, rng.integers(0, 2, nf), rng.integers(0, 1 << 32, nf), fs // 17, fs // 7)
    acc = (rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 32, n), sq // 17, sq // 7, sq)
    got = fence_releasing(fences, *acc, its)
    assert got.tolist() == [fence_releasing_reference(fences, t, its) for t in zip(*acc)]
    assert (got < NONE).any() and (got == NONE).any()


def threaded_pattern(rng, n: int, its: bool, blocks: int = 3):
    """random_pattern's flags with the rows and reads as threads of blocks:
    (Acquired with threads, rows' and reads' thread info); intervals grow with the seq."""
    seq = rng.integers(0, 60, n)
    agent = rng.integers(0, blocks, n)
    warp, lane = rng.integers(0, 2, n), rng.integers(0, 3, n)
    after = np.where(rng.random(n) < 0.8, seq + rng.integers(1, 8, n), NONE)
    pubs, reads = 8, 16
    r = rng.integers(0, n, reads)                          # the reads are rows (strong reads)
    rseq = seq[r]
    places = Places(warp, lane, seq // 20, seq // 7)
    threads = Threads(places, places.at(r), its)
    return Acquired(agent=agent, seq=seq, after=after, pub_agent=rng.integers(0, blocks, pubs),
                    pub_flag=rng.integers(0, 3, pubs) * 8, pub_seq=rng.integers(0, 60, pubs),
                    read_agent=agent[r], read_flag=rng.integers(0, 3, reads) * 8, read_seq=rseq,
                    threads=threads)


@pytest.mark.parametrize("its", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_pairs_seen_by_threads_agree_with_the_plain_python_rule(seed, its):
    acq = threaded_pattern(np.random.default_rng(seed), 40, its)
    x, y = (g.ravel() for g in np.meshgrid(np.arange(40), np.arange(40)))
    got = acq.pairs(x, y)
    assert got.tolist() == [acq.pair_reference(int(i), int(j)) for i, j in zip(x, y)]
    assert not (got & ~acq.any[y]).any()


@pytest.mark.parametrize("its", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_the_latest_read_a_thread_sees_decides_its_pairs(seed, its):
    # where y's block read one flag: y acquires from x where x's agent published it
    # after x's fence and before the latest read of it that y's thread sees
    acq = threaded_pattern(np.random.default_rng(seed), 30, its)
    count, flag, latest = acq.reads_before(np.arange(30))
    checked = 0
    for y in np.flatnonzero(count == 1):
        for x in range(30):
            pub = acq.publication_after(acq.agent[x:x + 1], flag[y:y + 1], acq.after[x:x + 1])
            assert acq.pair_reference(x, int(y)) == bool(acq.handed[y] or (latest[y] >= 0 and pub[0] < latest[y]))
            checked += 1
    assert checked
