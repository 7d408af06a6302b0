"""launch_sums: batches' request tables folded into a launch's, read once."""
from __future__ import annotations

import numpy as np
import pytest

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


def _worst_of(sums, used: list, space_code: int, space: str, rank, op, size, line, worst) -> None:
    """The readable rule of the settle's kept requests: keep in `worst` each
    line's costliest request of the rows of `space_code` among `used`
    (request_table.used_or_seen of the folded table): the highest cost, the
    earliest batch, the lowest rank(instr), the first in its batch."""
    from gpuemu.memory.worst_requests import WorstRequest
    NSP = request_table.NSP
    best: dict = {}
    for row, v in used:
        if row % NSP != space_code or not v[COL["requests"]]:
            continue
        i = row // NSP
        ln = int(line[i])
        key = (-v[COL["best"]], int(sums.batch_of[row]), rank(i), v[COL["best_at"]])
        if ln not in best or key < best[ln][0]:
            best[ln] = (key, i, row)
    for ln, (key, i, row) in best.items():
        worst.by_line[(space, ln)] = WorstRequest(
            space=space, row=ln, op=request_table.OPS[int(op[i])], size=int(size[i]), cost=-key[0],
            mask=int(sums.masks[row]), addrs=tuple(sums.addrs[row].tolist()))


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


def _seen_rows(rng, rows: int) -> np.ndarray:
    """A batch's table whose rows are seen (random sums, a kept request) or as new_table makes them."""
    t = request_table.new_table(rows // request_table.NSP)
    for r in np.flatnonzero(rng.random(rows) < 0.3):
        t[r] = rng.integers(1, 50, t.shape[1])
        t[r, COL["best_at"]] = rng.integers(0, 2)
    return t


def test_folding_by_seen_rows_sums_what_folding_every_row_sums():
    # native_batch's chain: a row its cycle pass did not see holds nothing to fold or clear
    rng = np.random.default_rng(4)
    arrays = _arrays([LANES * 4, LANES * 8], [0xFFFFFFFF, 0xFF])
    every, seen = LaunchSums(6), LaunchSums(6)
    for _ in range(3):
        t = _seen_rows(rng, every.rows)
        u = t.copy()
        every.fold(t, arrays, clear=True)
        seen.fold(u, arrays, clear=True, by_seen=True)
        assert np.array_equal(t, u) and np.array_equal(t, request_table.new_table(6))
    for a, b in ((every.table, seen.table), (every.batch_of, seen.batch_of), (every.masks, seen.masks),
                 (every.addrs, seen.addrs)):
        assert np.array_equal(a, b)
    assert every.table[:, COL["requests"]].any()


def test_folding_by_seen_passes_over_a_row_not_seen():
    sums = LaunchSums(2)
    t = _table(2, 3, 2, 1)                    # requests counted, but not seen
    sums.fold(t, _arrays([LANES * 4, LANES * 8], [0xFFFFFFFF, 0xFF]), clear=True, by_seen=True)
    assert sums.table[0, COL["requests"]] == 0 and t[0, COL["requests"]] == 2


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


def _folded(rng, n_instrs: int, batches: int) -> LaunchSums:
    """Random batches' tables (as the passes fill them) folded into a LaunchSums."""
    sums = LaunchSums(n_instrs)
    for _ in range(batches):
        t = request_table.new_table(n_instrs)
        rows = np.flatnonzero(rng.random(t.shape[0]) < 0.5)
        t[rows] = rng.integers(0, 4, (rows.size, request_table.NC))
        t[rows, COL["requests"]] = rng.integers(0, 3, rows.size)
        t[rows, COL["best"]] = np.where(t[rows, COL["requests"]] > 0, rng.integers(0, 3, rows.size), -1)
        t[rows, COL["best_at"]] = rng.integers(0, 4, rows.size)
        k = 4
        sums.fold(t, _arrays([rng.integers(0, 1 << 20, 32) for _ in range(k)],
                             rng.integers(0, 1 << 32, k, dtype=np.uint64).astype(np.uint32)))
    return sums


def _plan(rng, n: int) -> request_table.CounterPlan:
    t = dict(op=rng.integers(0, 4, n).astype(np.int8), size=rng.choice([1, 4, 8], n).astype(np.int64),
             line=rng.integers(1, 4, n).astype(np.int64), ro=rng.random(n) < 0.5, spill=rng.random(n) < 0.5,
             tex=rng.random(n) < 0.5)
    kind = rng.integers(0, 4, n * request_table.NSP).astype(np.int8)
    return request_table.CounterPlan(t, (1, 0, 2), True, True, kind, "l1"), t


@pytest.mark.parametrize("seed", range(6))
def test_the_native_settle_gives_the_plans_counters_and_worst_ofs_kept_requests(seed):
    from gpuemu.memory.worst_requests import WorstRequests
    rng = np.random.default_rng(seed)
    n = 7
    plan, t = _plan(rng, n)
    sums = _folded(rng, n, 3)
    rank = lambda i: (int(t["size"][i]), int(t["op"][i]) * 2 + int(t["op"][i] == 0 and t["ro"][i]))  # noqa: E731
    used = request_table.used_or_seen(sums.table)
    from gpuemu.memory.worst_requests import WorstRequest
    earlier = WorstRequest(space="global", row=2, op="ld", size=4, cost=2, mask=1, addrs=(0,) * 32)
    want_stats, want_worst = Stats(), WorstRequests({("global", 2): earlier})     # an earlier batch's
    want_stats.add_sums(plan.counters_of(used))
    later = WorstRequests()
    _worst_of(sums, used, 1, "shared", lambda i: 0, t["op"], t["size"], t["line"], later)
    _worst_of(sums, used, 0, "global", rank, t["op"], t["size"], t["line"], later)
    want_worst.merge(later)
    got_stats, got_worst = Stats(), WorstRequests({("global", 2): earlier})
    sums.settle(plan, got_stats, got_worst, t["op"], t["size"], {1: "shared", 0: "global"})
    assert dict(got_stats.totals) == dict(want_stats.totals) and got_stats.lines_dict() == want_stats.lines_dict()
    assert list(got_worst.by_line) == list(want_worst.by_line)
    assert {k: w.as_dict() for k, w in got_worst.by_line.items()} == \
        {k: w.as_dict() for k, w in want_worst.by_line.items()}
    assert sums.batches == 0 and (sums.table == request_table.new_table(n)).all()


def _ended(seed: int, then: tuple):
    """A random launch's sums settled natively and kept as an Ended (LaunchSums.ended) with
    the launch's end `then`, and the Stats and WorstRequests `settled` fills at once."""
    from gpuemu.memory.worst_requests import WorstRequests
    out = []
    for _ in range(2):
        rng = np.random.default_rng(seed)
        plan, t = _plan(rng, 7)
        sums = _folded(rng, 7, 3)
        spaces = {1: "shared", 0: "global"}
        r = sums.settle_call(plan, spaces)()
        out.append((sums, r, Stats(), WorstRequests(), t))
    (s1, r1, st, worst, t), (s2, r2, st2, worst2, _) = out
    s1.settled(r1, st, worst, t["op"], t["size"], then)
    return s2.ended(r2, st2, worst2, t["op"], t["size"], then), st, worst


@pytest.mark.parametrize("seed", range(3))
def test_an_ended_launch_reads_as_its_sums_settled_at_once(seed):
    table = np.array([[0, 3], [5, 0]], dtype=np.int64)
    end, st, worst = _ended(seed, ((("fences", "barriers"), table.tobytes(), None), ("cycles", 40)))
    assert end.as_dict() == st.as_dict() and end.lines_dict() == st.lines_dict()
    assert {k: w.as_dict() for k, w in end.by_line.items()} == {k: w.as_dict() for k, w in worst.by_line.items()}


def test_an_ended_launch_tells_counters_it_does_not_hold_without_adding_them_up():
    table = np.array([[0, 3], [5, 0]], dtype=np.int64)
    end, st, _ = _ended(1, ((("fences", "barriers"), table.tobytes(), None), ("cycles", 40)))
    timed = ("cycles", "page_faults")
    assert end.get_each(timed, frozenset(timed)) == st.get_each(timed, frozenset(timed)) == [40, 0]
    assert end.base.empty                  # nothing deferred into its Stats yet
    held = ("barriers", "cycles", end.settle[0].names[0])
    assert end.get_each(held, frozenset(held)) == st.get_each(held, frozenset(held))
    assert not end.base.empty
