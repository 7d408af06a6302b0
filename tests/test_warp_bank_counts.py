"""Shared loads and stores counted by the warps themselves
(gpuemu/memory/warp_bank_counts.py) give what the numpy path gives from
their trace: every counter in total and per line, the worst requests, the
per-SM and per-warp memory cycles; on one and two block workers."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import PROGRAMS
from gpuemu import manifest as mf
from gpuemu.machine import block_workers
from gpuemu.memory import warp_bank_counts as wbc
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory.native_batch import NativeBatch
from gpuemu.memory.trace import SPACE_CODES, MemInstr

SHARED = SPACE_CODES["shared"]


def launched(name: str, monkeypatch, native: bool, in_warps: bool = True, **options) -> dict:
    """Launch programs/NAME.json; its counters and the memory system's cycles,
    and how many shared requests reached the trace and the warps' counts."""
    kept, traced = [], []
    finish, prepare, charge = MemorySystem.finish, MemorySystem.prepare, NativeBatch.charge
    charge_last = NativeBatch.charge_last

    def keep_finish(self, stats, *args):
        kept.append(self)
        return finish(self, stats, *args)

    def keep_charge_last(self, ms, instrs, n, *args):   # the launch's last batch and its end (LaunchRun.finish)
        cycles = charge_last(self, ms, instrs, n, *args)
        if cycles is not None:
            kept.append(self.ms)
            traced.append(int((self.cols.cols["space"][:n] == SHARED).sum()))
        return cycles

    def keep_prepare(self, batch, instrs):
        traced.append(int((np.asarray(batch.space) == SHARED).sum()))
        return prepare(self, batch, instrs)

    def keep_charge(self, records, at=None):    # the launch's batches charged at once (native_batch.py)
        served = charge(self, records, at)
        if served:
            traced.append(int((records["space"] == SHARED).sum()))
        return served

    monkeypatch.setattr(MemorySystem, "native", native)
    monkeypatch.setattr(MemorySystem, "count_shared_in_warps", in_warps)
    monkeypatch.setattr(MemorySystem, "finish", keep_finish)
    monkeypatch.setattr(MemorySystem, "prepare", keep_prepare)
    monkeypatch.setattr(NativeBatch, "charge", keep_charge)
    monkeypatch.setattr(NativeBatch, "charge_last", keep_charge_last)
    r = mf.run(PROGRAMS / f"{name}.json", **options)
    ms = kept[-1]
    # global addresses are where this run's buffers happen to lie: compared as offsets
    worst = {k: dict(w.as_dict(), addrs=np.subtract(w.addrs, min(w.addrs)).tolist())
             for k, w in r.launch.worst_requests.items()}
    return dict(totals=r.launch.stats, lines=r.launch.stats_by_line, worst=worst,
                sm=ms.sm_cycles.tolist(), warps=ms.warp_cycles, traced_shared=sum(traced))


COUNTED = ["matmul_tiled", "transpose_tiled32", "transpose_tiled33", "reduce_sequential", "shared_char",
           "shared_broadcast", "shared_stride", "stencil_1d", "dynamic_shared_carve"]


@pytest.mark.parametrize("name", COUNTED)
def test_shared_requests_counted_by_the_warps_give_the_numpy_paths_counters(name, monkeypatch):
    want = launched(name, monkeypatch, native=False)
    got = launched(name, monkeypatch, native=True)
    assert want["traced_shared"] > 0 and got["traced_shared"] == 0      # none of them traced
    assert {k: v for k, v in got.items() if k != "traced_shared"} == \
        {k: v for k, v in want.items() if k != "traced_shared"}


@pytest.mark.parametrize("name", ["matmul_tiled", "transpose_tiled33", "reduce_sequential"])
def test_two_block_workers_counting_in_their_warps_count_what_one_worker_counts(name, monkeypatch):
    want = launched(name, monkeypatch, native=False)
    got = launched(name, monkeypatch, native=True, workers=2)
    assert got["traced_shared"] == 0
    assert {k: v for k, v in got.items() if k != "traced_shared"} == \
        {k: v for k, v in want.items() if k != "traced_shared"}


def test_a_seeded_launch_keeps_the_first_costliest_request_in_its_block_order(monkeypatch):
    # blocks run in a seeded-random order: the worst request is the first one issued
    want = launched("transpose_tiled32", monkeypatch, native=False, seed=5)
    got = launched("transpose_tiled32", monkeypatch, native=True, seed=5)
    assert got["traced_shared"] == 0 and got["worst"] == want["worst"] and got["totals"] == want["totals"]


def test_the_trace_path_and_the_warps_count_the_same(monkeypatch):
    traced = launched("matmul_tiled", monkeypatch, native=True, in_warps=False)
    counted = launched("matmul_tiled", monkeypatch, native=True)
    assert traced["traced_shared"] == counted["totals"]["shared_load_requests"] + \
        counted["totals"]["shared_store_requests"]
    assert {k: v for k, v in counted.items() if k != "traced_shared"} == \
        {k: v for k, v in traced.items() if k != "traced_shared"}


def test_kernels_with_shared_atomics_or_wide_shared_words_trace_their_shared_requests(monkeypatch):
    for name in ("histogram_shared_atomics", "shared_double"):
        want = launched(name, monkeypatch, native=False)
        got = launched(name, monkeypatch, native=True)
        assert got["traced_shared"] == want["traced_shared"] > 0
        assert got["totals"] == want["totals"] and got["worst"] == want["worst"]


MASKED = r"""
extern "C" __global__ void masked(int *out)
{
    __shared__ int s[1024];
    int t = threadIdx.x, lane = t % 32;
    s[t] = t;
    __syncthreads();
    int v = 0;
    if (lane >= 5) v = s[(t * 8) % 1024];                      // 8 rows in 4 banks, lanes 5..31
    if (lane >= 3 && lane < 20) v += s[lane + 32 * (lane % 2)];  // two rows from lane 3
    if (lane >= 9) v += s[64 + lane + 32 * (lane < 9)];        // one row from lane 9 (lane 0's not)
    if (lane == 7) v += s[999];                                 // one lane
    out[blockIdx.x * blockDim.x + t] = v;
}
"""


def _numpy_and_native(monkeypatch, src: str, name: str):
    """A 2x256 launch of `name` counted by the numpy path, then by the native one:
    (stats, stats by line, shared worst requests, output) of each."""
    import gpuemu
    k = gpuemu.RawModule(code=src).get_function(name)

    def launch():
        out = np.zeros(512, dtype=np.int32)
        lau = k((2,), (256,), (out,))
        worst = {key: w.as_dict() for key, w in lau.worst_requests.items() if w.space == "shared"}
        return lau.stats, lau.stats_by_line, worst, out.tolist()
    monkeypatch.setattr(MemorySystem, "native", False)
    want = launch()
    monkeypatch.setattr(MemorySystem, "native", True)
    return want, launch()


def test_requests_whose_first_lanes_are_inactive_are_counted_as_the_numpy_path_counts(monkeypatch):
    want, got = _numpy_and_native(monkeypatch, MASKED, "masked")
    assert got == want
    assert want[0]["shared_load_requests"] == 2 * 8 * 4 and want[0]["shared_bank_conflicts"] > 0


WHOLE = r"""
extern "C" __global__ void whole(int *out)
{
    __shared__ int s[2048];
    int t = threadIdx.x, lane = t % 32;
    s[t] = t; s[t + 1024] = t;
    __syncthreads();
    int v = s[(t / 32) * 32 + (31 - lane)];          // one row
    v += s[5];                                      // one word
    v += s[lane + 32 * (lane % 2)];                 // two rows, no bank twice
    v += s[lane == 31 ? 1024 : lane];               // lane 31 far away (a high bit), in lane 0's bank
    v += s[(lane * 32) % 2048];                     // every lane in bank 0: 32 rows
    out[blockIdx.x * blockDim.x + t] = v;
}
"""


def test_whole_warp_requests_in_one_row_or_more_are_counted_as_the_numpy_path_counts(monkeypatch):
    want, got = _numpy_and_native(monkeypatch, WHOLE, "whole")
    assert got == want
    # per warp (16): 2 stores and 3 loads of one wavefront, 1 of two (bank 0 twice), 1 of 32
    assert want[0]["shared_load_wavefronts"] == 16 * (1 + 1 + 1 + 2 + 32)
    assert want[0]["shared_store_wavefronts"] == 16 * 2


def _instr(i, op, size, space):
    return MemInstr(i, op, size, 3, space)


def _applies(instrs) -> bool:
    ms = MemorySystem("sm_90")
    ms._tables(instrs)
    assert wbc.counted(ms, instrs) == ms._shared_in_warps
    return wbc.applies(ms._shared_native, instrs)


def test_it_applies_to_loads_and_stores_of_at_most_a_bank_word_in_shared_or_generic_space():
    assert _applies([_instr(0, "ld", 4, "shared"), _instr(1, "st", 1, "generic"),
                     _instr(2, "atom", 8, "global"), _instr(3, "sync_shfl", 0, "sync")])
    assert not _applies([_instr(0, "ld", 4, "shared"), _instr(1, "atom", 4, "shared")])
    assert not _applies([_instr(0, "red", 4, "generic")])
    assert not _applies([_instr(0, "ld", 8, "shared")])      # two banks per lane on sm_90
    assert not _applies([_instr(0, "ld", 4, "global")])      # nothing to count


def _counts_with_best(cost: int, block: int, seq: int) -> wbc.WarpBankCounts:
    c = wbc.WarpBankCounts(1, 2, 1, 4)
    r = SHARED
    c.table[r, 0] = 1
    c.table[r, wbc.COL["best"]], c.table[r, wbc.COL["best_at"]] = cost, seq
    c.best[0, :2] = (0xF, block)
    c.state[wbc.SEQ] = seq + 1
    return c


def test_merging_workers_keeps_the_costliest_request_then_the_one_of_the_lowest_block():
    a = _counts_with_best(3, block=2, seq=0)
    a.merge(_counts_with_best(3, block=1, seq=9))       # as costly, an earlier block: taken
    assert (a.best[0, 1], a.table[SHARED, wbc.COL["best"]]) == (1, 3)
    a.merge(_counts_with_best(2, block=0, seq=0))       # cheaper: not taken
    assert a.best[0, 1] == 1
    a.merge(_counts_with_best(4, block=3, seq=0))       # costlier: taken
    assert (a.best[0, 1], a.table[SHARED, wbc.COL["best"]]) == (3, 4)
    assert a.table[SHARED, 0] == 4                         # requests add up


def _counts_of(rows: dict) -> wbc.WarpBankCounts:
    """A state of 3 instructions: rows {instr: (requests, cost, block, seq)}, others unused."""
    c = wbc.WarpBankCounts(3, 2, 1, 8)
    for i, (requests, cost, block, seq) in rows.items():
        r = i * wbc.NSP + SHARED
        c.table[r, 0], c.table[r, wbc.COL["cost"]] = requests, requests * cost
        c.table[r, wbc.COL["best"]], c.table[r, wbc.COL["best_at"]] = cost, seq
        c.best[i, :3] = (0xF, block, 1000 * i + block)
        c.state[wbc.SEQ] += requests
    return c


def test_merging_workers_adds_every_row_and_keeps_each_rows_own_costliest_request():
    a = _counts_of({0: (2, 2, 5, 3), 2: (1, 1, 4, 0)})
    a.merge(_counts_of({1: (3, 1, 1, 0), 2: (2, 1, 6, 0)}))
    best = [(int(a.table[i * wbc.NSP + SHARED, wbc.COL["best"]]), int(a.best[i, 1])) for i in range(3)]
    assert best == [(2, 5), (1, 1), (1, 4)]          # row 2: as costly, block 4 before block 6
    assert [int(a.table[i * wbc.NSP + SHARED, 0]) for i in range(3)] == [2, 3, 3]
    assert a.best[:, 2].tolist() == [5, 1001, 2004]  # each row's addresses came with its request
    assert a.requests == 8


def test_the_worst_request_of_a_line_is_its_costliest_instructions_first_costliest_request():
    from gpuemu.memory.worst_requests import WorstRequests
    a = _counts_of({0: (2, 2, 5, 3), 1: (3, 2, 1, 0), 2: (1, 3, 4, 0)})
    a.merge(_counts_of({}))                              # nothing counted: nothing changes
    a.merge(_counts_of({0: (1, 1, 0, 0)}))               # by block from now on
    worst = WorstRequests()
    a.worst(np.array([0, 1, 0]), np.array([4, 4, 4]), np.array([7, 7, 9]), worst)
    assert list(worst.by_line) == [("shared", 7), ("shared", 9)]
    w7, w9 = worst.by_line[("shared", 7)], worst.by_line[("shared", 9)]
    assert (w7.op, w7.cost, w7.addrs[0]) == ("st", 2, 1001)   # cost 2 twice on line 7: block 1 came first
    assert (w9.op, w9.cost, w9.mask, w9.addrs[0]) == ("ld", 3, 0xF, 2004)


def test_kept_worker_copies_count_a_second_launch_into_their_own_states(monkeypatch):
    import gpuemu
    k = gpuemu.RawModule(path=str(PROGRAMS / "matmul_tiled.cu")).get_function("matmul_tiled")
    n = 64
    a = np.random.default_rng(3).random((n, n), dtype=np.float32)

    def launch(**options):
        c = np.zeros_like(a)
        lau = k((n // 16, n // 16), (16, 16), (a, a, c, np.int32(n), np.int32(n), np.int32(n)), **options)
        assert np.allclose(c, a @ a, rtol=1e-5)
        return lau.stats, lau.stats_by_line
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (small: on the workers)
    monkeypatch.setattr(MemorySystem, "native", False)
    want = launch()
    monkeypatch.setattr(MemorySystem, "native", True)
    merged, merge = [], wbc.WarpBankCounts.merge

    def keep_merge(self, other):
        merged.append(other.requests)
        return merge(self, other)
    monkeypatch.setattr(wbc.WarpBankCounts, "merge", keep_merge)
    for _ in range(3):
        merged.clear()
        assert launch(workers=2) == want
        # each worker counted its own blocks in its own state
        assert sum(merged) == want[0]["shared_load_requests"] + want[0]["shared_store_requests"]


def test_only_kernels_with_shared_capable_instructions_are_counted_in_the_warps(monkeypatch):
    got = launched("vecadd", monkeypatch, native=True)
    want = launched("vecadd", monkeypatch, native=False)
    assert got["totals"] == want["totals"] and got["traced_shared"] == 0
    assert not wbc.counted(MemorySystem("sm_90"), [_instr(0, "ld", 4, "global")])
    assert wbc.counted(MemorySystem("sm_90"), [_instr(0, "ld", 4, "generic")])
