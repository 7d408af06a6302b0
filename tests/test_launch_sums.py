"""launch_sums: batches' request tables folded into a launch's, read once."""
from __future__ import annotations

import numpy as np

from gpuemu.memory import request_table
from gpuemu.memory.launch_sums import LaunchSums
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory.synthetic import concat, warp_requests
from gpuemu.memory.trace import MemInstr
from gpuemu.stats import Stats

LANES = np.arange(32)
COL = request_table.COL


def _arrays(addrs, masks):
    """request_table.batch_arrays of requests of instruction 0 with these lanes and masks."""
    b = concat([warp_requests(0, a, mask=m) for a, m in zip(addrs, masks)])
    return request_table.batch_arrays(b, np.zeros(2, np.int8), np.full(2, 4, np.int64), np.zeros(2, np.int8))


def _table(requests, cost, best, at):
    t = request_table.new_table(2)
    t[0, COL["requests"]], t[0, COL["cost"]], t[0, COL["best"]], t[0, COL["best_at"]] = requests, cost, best, at
    return t


def test_folding_adds_the_sums_of_every_batch():
    sums = LaunchSums(2)
    arrays = _arrays([LANES * 4, LANES * 8], [0xFFFFFFFF, 0xFF])
    for t in (_table(2, 3, 2, 1), _table(5, 7, 1, 0)):
        t[9, COL["cycles"]] = 11
        sums.fold(t, arrays)
    assert sums.table[0, COL["requests"]] == 7 and sums.table[0, COL["cost"]] == 10
    assert sums.table[9, COL["cycles"]] == 22
    assert sums.table[1:9, COL["best"]].tolist() == [-1] * 8      # rows without requests: none kept


def test_a_row_keeps_the_costliest_request_with_its_lanes_copied_out_of_its_batch():
    sums = LaunchSums(2)
    sums.fold(_table(2, 3, 2, 1), _arrays([LANES * 4, LANES * 8], [0xFFFFFFFF, 0xFF]))
    sums.fold(_table(2, 5, 4, 0), _arrays([LANES * 16, LANES * 32], [0xF0F0F0F0, 1]))
    assert (sums.table[0, COL["best"]], sums.table[0, COL["best_at"]], sums.batch_of[0]) == (4, 0, 1)
    assert sums.masks[0] == 0xF0F0F0F0 and sums.addrs[0].tolist() == (LANES * 16).tolist()


def test_a_later_batch_as_costly_does_not_replace_the_kept_request():
    sums = LaunchSums(2)
    sums.fold(_table(1, 3, 3, 0), _arrays([LANES * 4], [0xFFFFFFFF]))
    sums.fold(_table(1, 3, 3, 0), _arrays([LANES * 8], [0xFFFFFFFF]))
    assert sums.batch_of[0] == 0 and sums.addrs[0].tolist() == (LANES * 4).tolist()


def test_clear_starts_from_nothing_folded():
    sums = LaunchSums(2)
    sums.fold(_table(1, 3, 3, 0), _arrays([LANES * 4], [0xFFFFFFFF]))
    sums.clear()
    assert sums.batches == 0 and (sums.table == request_table.new_table(2)).all()


def _kept_after(batches, instrs, native, deferred):
    ms = MemorySystem("sm_90")
    ms.native = native
    st = Stats()
    for b in batches:
        if deferred:                     # as a launch: settled once, at its end
            ms.apply(ms.prepare(b, instrs), st)
        else:
            ms.charge(b, instrs, st)
    ms.finish(st)
    return {k: w.as_dict() for k, w in ms.worst.by_line.items()}, dict(st.totals)


def test_the_kept_request_of_a_line_is_the_earliest_batchs_as_batch_by_batch():
    # line 7: instruction 1 costs 4 wavefronts in batch 0, instruction 0 costs 4 only in batch 1:
    # batch by batch, batch 1's request does not replace batch 0's (it costs no more)
    instrs = [MemInstr(0, "ld", 4, 7, "shared"), MemInstr(1, "ld", 4, 7, "shared")]
    four_way, two_way = 128 * (LANES % 4), 128 * (LANES % 2)
    batches = [concat([warp_requests(0, two_way), warp_requests(1, four_way)]),
               concat([warp_requests(0, four_way + 4), warp_requests(1, two_way)])]
    want = _kept_after(batches, instrs, native=False, deferred=False)
    assert want[0][("shared", 7)]["addrs"] == four_way.tolist()
    assert _kept_after(batches, instrs, native=True, deferred=True) == want
    assert _kept_after(batches, instrs, native=True, deferred=False) == want
