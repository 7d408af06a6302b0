"""The memory system keeps, per source line, the first request of the highest cost:
the one the report's pictures redraw."""
from __future__ import annotations

import numpy as np

from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory.synthetic import concat, warp_requests
from gpuemu.memory.trace import MemInstr
from gpuemu.memory.worst_requests import WorstRequests
from gpuemu.stats import Stats

LANES = np.arange(32)


def test_keeps_the_first_request_of_the_highest_cost_per_line():
    w = WorstRequests()
    addrs = np.stack([LANES * 4, LANES * 8, LANES * 128, LANES * 256])
    w.note("shared", np.array([5, 5, 5, 6]), np.array(["ld"] * 4), np.full(4, 4),
           np.array([1, 2, 32, 32]), np.full(4, 0xFFFFFFFF), addrs)
    assert w.get("shared", 5).cost == 32
    assert w.get("shared", 5).addrs == tuple(LANES * 128)
    assert w.get("shared", 6).addrs == tuple(LANES * 256)


def test_a_later_batch_replaces_only_a_cheaper_request():
    w = WorstRequests()
    one = lambda cost, stride: w.note("global", np.array([3]), np.array(["ld"]), np.array([4]),
                                      np.array([cost]), np.array([0xFFFFFFFF]), (LANES * stride)[None])
    one(4, 4)
    one(32, 128)
    one(32, 256)          # as costly, but later: the first stays
    assert w.get("global", 3).addrs == tuple(LANES * 128)


def test_merging_a_later_batch_keeps_the_first_of_the_highest_cost():
    def kept(cost, stride):
        w = WorstRequests()
        w.note("global", np.array([3]), np.array(["ld"]), np.array([4]), np.array([cost]),
               np.array([0xFFFFFFFF]), (LANES * stride)[None])
        return w
    w = kept(32, 128)
    w.merge(kept(32, 256))          # as costly, but later: the first stays
    assert w.get("global", 3).addrs == tuple(LANES * 128)
    w.merge(kept(33, 512))
    assert w.get("global", 3).cost == 33


def test_memory_system_records_the_worst_shared_and_global_request_of_a_line():
    ms = MemorySystem("sm_90")
    instrs = [MemInstr(0, "ld", 4, 10, "shared"), MemInstr(1, "ld", 4, 11, "global")]
    batch = concat([warp_requests(0, LANES * 4), warp_requests(0, LANES * 128),
                    warp_requests(1, 4096 + LANES * 4, space="global"),
                    warp_requests(1, 4096 + LANES * 64, space="global")])
    ms.charge(batch, instrs, Stats())
    shared, glob = ms.worst.get("shared", 10), ms.worst.get("global", 11)
    assert (shared.cost, shared.op, shared.size) == (32, "ld", 4)     # stride 32 words: 32-way
    assert glob.cost == 32                                           # 64 B apart: a sector per lane
    assert glob.addrs == tuple(4096 + LANES * 64)


def test_deferred_requests_are_taken_in_in_order_before_anything_reads_or_adds():
    w = WorstRequests()
    order = []
    w.defer(lambda kept: order.append(("first", dict(kept))))
    w.defer(lambda kept: order.append(("second", len(kept))) or kept.__setitem__(("global", 3), "kept"))
    assert order == []                       # nothing made until read
    w.note("global", np.array([4]), np.array(["ld"]), np.array([4]), np.array([2]),
           np.array([0xFFFFFFFF]), (LANES * 4)[None])
    assert order == [("first", {}), ("second", 0)]
    assert w.by_line[("global", 3)] == "kept" and w.get("global", 4).cost == 2
