"""Shared loads and stores counted by the warps themselves
(gpuemu/memory/warp_bank_counts.py) give what the numpy path gives from
their trace: every counter in total and per line, the worst requests, the
per-SM and per-warp memory cycles; on one and two block workers."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import PROGRAMS
from gpuemu import manifest as mf
from gpuemu.arch import get_preset
from gpuemu.memory import warp_bank_counts as wbc
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory.trace import SPACE_CODES, MemInstr

SHARED = SPACE_CODES["shared"]


def launched(name: str, monkeypatch, native: bool, in_warps: bool = True, **options) -> dict:
    """Launch programs/NAME.json; its counters and the memory system's cycles,
    and how many shared requests reached the trace and the warps' counts."""
    kept, traced = [], []
    finish, prepare = MemorySystem.finish, MemorySystem.prepare

    def keep_finish(self, stats, issue_cycles_per_sm=None):
        kept.append(self)
        return finish(self, stats, issue_cycles_per_sm)

    def keep_prepare(self, batch, instrs):
        traced.append(int((np.asarray(batch.space) == SHARED).sum()))
        return prepare(self, batch, instrs)

    monkeypatch.setattr(MemorySystem, "native", native)
    monkeypatch.setattr(MemorySystem, "count_shared_in_warps", in_warps)
    monkeypatch.setattr(MemorySystem, "finish", keep_finish)
    monkeypatch.setattr(MemorySystem, "prepare", keep_prepare)
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


def _instr(i, op, size, space):
    return MemInstr(i, op, size, 3, space)


def test_it_applies_to_loads_and_stores_of_at_most_a_bank_word_in_shared_or_generic_space():
    mem = get_preset("sm_90").mem
    assert wbc.applies(mem, [_instr(0, "ld", 4, "shared"), _instr(1, "st", 1, "generic"),
                             _instr(2, "atom", 8, "global"), _instr(3, "sync_shfl", 0, "sync")])
    assert not wbc.applies(mem, [_instr(0, "ld", 4, "shared"), _instr(1, "atom", 4, "shared")])
    assert not wbc.applies(mem, [_instr(0, "red", 4, "generic")])
    assert not wbc.applies(mem, [_instr(0, "ld", 8, "shared")])      # two banks per lane on sm_90


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
    assert not wbc._counted(get_preset("sm_90").mem, [_instr(0, "ld", 4, "global")])
    assert wbc._counted(get_preset("sm_90").mem, [_instr(0, "ld", 4, "generic")])
