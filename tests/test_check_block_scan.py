"""block_scan, the native walk over shared and local records, against the
plain-Python rules: racecheck.find_races_reference and
initcheck.uninitialized_reference on the same records, decoded into rows."""
from __future__ import annotations

import numpy as np
import pytest

from gpuemu.check import block_scan
from gpuemu.check.accesses import InstrTables, decode
from gpuemu.check.initcheck import uninitialized_reference
from gpuemu.check.racecheck import KINDS, WarpSyncs, find_races_reference
from gpuemu.jit import abi
from gpuemu.memory.trace import SPACE_CODES, MemInstr

SHARED, LOCAL = SPACE_CODES["shared"], SPACE_CODES["local"]
INSTRS = [MemInstr(0, "st", 4, 3, "shared"), MemInstr(1, "ld", 4, 4, "shared"),
          MemInstr(2, "atom", 4, 5, "shared"), MemInstr(3, "st", 8, 6, "shared"),
          MemInstr(4, "ld", 8, 7, "shared"), MemInstr(5, "red", 4, 8, "shared")]
TPB = 64                  # two warps per block
UNITS = 6                 # 4-byte units the random accesses touch


def random_trace(rng, n: int, space: int = SHARED) -> np.ndarray:
    """n records of three blocks, one after another, barrier intervals in
    order; few lanes, few units, so that accesses meet."""
    rec = np.zeros(n, abi.TRACE_DTYPE)
    rec["block"] = np.sort(rng.integers(0, 3, n))
    rec["warp"] = rng.integers(0, 2, n)
    rec["instr"] = rng.integers(0, len(INSTRS), n)
    rec["space"] = np.where(rng.random(n) < 0.9, space, SPACE_CODES["global"])
    rec["mask"] = rng.integers(1, 16, n)              # lanes 0-3
    epoch = np.zeros(n, np.int64)
    for b in range(3):
        mine = rec["block"] == b
        epoch[mine] = np.sort(rng.integers(0, 3, mine.sum()))
    rec["epoch"] = epoch | (rng.integers(0, 2, n) << 32)
    size = np.array([i.size for i in INSTRS])[rec["instr"]]
    units = rng.integers(0, UNITS - 1, (n, abi.WARP))
    rec["addr"] = units * 4 // size[:, None] * size[:, None]   # naturally aligned
    return rec


def run_scan(rec: np.ndarray, space: int, its: bool, race: bool, init: bool, upt: int = 0,
             syncs: WarpSyncs = None):
    t = InstrTables.of(INSTRS)
    tab = block_scan.tables(t.line, t.write, t.read, t.atomic, t.size, 4)
    shadow = block_scan.Shadow(UNITS if not upt else TPB * upt, race, upt)
    ptr = rec.ctypes.data + np.arange(len(rec), dtype=np.int64) * rec.itemsize
    seq = np.arange(len(rec), dtype=np.int64) + 100
    st = syncs.tables(rec["block"], TPB // abi.WARP) if syncs is not None else None
    status, races, uninit = block_scan.scan(ptr, seq, space, tab, 4, shadow, its, race, init, st)
    return status, tab, races, uninit


def rows_of(rec: np.ndarray, space: str):
    return decode(rec, 100, InstrTables.of(INSTRS), {space: 4})[space]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("its", [False, True])
def test_races_in_shared_memory_agree_with_the_reference(seed, its):
    rec = random_trace(np.random.default_rng(seed), 300)
    status, tab, races, _ = run_scan(rec, SHARED, its, race=True, init=False)
    assert status == block_scan.OK
    got = {(KINDS[k], int(tab.lines[a]), int(tab.lines[b])): int(races[k, a, b, 0])
           for k, a, b in np.argwhere(races[..., 0] > 0)}
    rows = rows_of(rec, "shared")
    want = find_races_reference(rows, (rows.block, rows.epoch, rows.unit), TPB, its)
    assert want and got == {k: v[0] for k, v in want.items()}


@pytest.mark.parametrize("seed", range(6))
def test_races_with_partial_syncwarps_agree_with_the_reference(seed):
    rng = np.random.default_rng(seed)
    rec = random_trace(rng, 300)
    rec["epoch"] = (rec["epoch"] & 0xFFFFFFFF) | (rng.integers(0, 4, len(rec)) << 32)
    # calls 1-3 of every warp, a few missing, some by part of the warp or naming part of it
    b, w, k = (a.ravel() for a in np.meshgrid(np.arange(3), np.arange(2), np.arange(1, 4), indexing="ij"))
    on = rng.random(len(b)) < 0.9
    active = np.where(rng.random(len(b)) < 0.4, 0xFFFFFFFF, rng.choice([0xF, 0x3, 0xC, 0x5], len(b)))
    masks = np.where(rng.random((len(b), 32)) < 0.5, 0xFFFFFFFF, rng.choice([0xF, 0x3, 0xC, 0xA], (len(b), 32)))
    syncs = WarpSyncs()
    syncs.add(b[on], w[on], k[on], active[on].astype(np.uint32), masks[on].astype(np.uint32),
              np.full(int(on.sum()), 0xFFFFFFFF))
    status, tab, races, _ = run_scan(rec, SHARED, True, race=True, init=False, syncs=syncs)
    assert status == block_scan.OK
    got = {(KINDS[k], int(tab.lines[a]), int(tab.lines[b])): int(races[k, a, b, 0])
           for k, a, b in np.argwhere(races[..., 0] > 0)}
    rows = rows_of(rec, "shared")
    want = find_races_reference(rows, (rows.block, rows.epoch, rows.unit), TPB, True, syncs=syncs)
    assert want and got == {k: v[0] for k, v in want.items()}
    assert want != find_races_reference(rows, (rows.block, rows.epoch, rows.unit), TPB, True)


@pytest.mark.parametrize("seed", range(6))
def test_the_pair_standing_for_a_race_is_two_threads_of_one_block(seed):
    rec = random_trace(np.random.default_rng(seed), 300)
    _, _, races, _ = run_scan(rec, SHARED, True, race=True, init=False)
    for k, a, b in np.argwhere(races[..., 0] > 0):
        _, blk, t, oblk, ot, unit = races[k, a, b]
        assert blk == oblk and t != ot and 0 <= unit < UNITS


@pytest.mark.parametrize("seed", range(6))
def test_uninitialised_shared_reads_agree_with_the_reference(seed):
    rec = random_trace(np.random.default_rng(seed), 300)
    status, tab, _, uninit = run_scan(rec, SHARED, True, race=False, init=True)
    assert status == block_scan.OK
    rows = rows_of(rec, "shared")
    bad = uninitialized_reference(rows, (rows.block, rows.unit))
    lines, first, counts = np.unique(rows.line[bad], return_index=True, return_counts=True)
    assert len(bad)
    assert {int(tab.lines[i]): int(uninit[i, 0]) for i in np.flatnonzero(uninit[:, 0])} == \
        dict(zip(lines.tolist(), counts.tolist()))
    for line, i in zip(lines.tolist(), bad[first].tolist()):     # the first such read stands for all
        li = int(np.searchsorted(tab.lines, line))
        assert uninit[li, 1:].tolist() == [rows.block[i], rows.warp[i] * abi.WARP + rows.lane[i],
                                           rows.unit[i]]


@pytest.mark.parametrize("seed", range(4))
def test_uninitialised_local_reads_are_per_thread(seed):
    rec = random_trace(np.random.default_rng(seed), 300, space=LOCAL)
    status, tab, _, uninit = run_scan(rec, LOCAL, True, race=False, init=True, upt=UNITS)
    assert status == block_scan.OK
    rows = rows_of(rec, "local")
    bad = uninitialized_reference(rows, (rows.block, rows.warp, rows.lane, rows.unit))
    lines, counts = np.unique(rows.line[bad], return_counts=True)
    assert {int(tab.lines[i]): int(uninit[i, 0]) for i in np.flatnonzero(uninit[:, 0])} == \
        dict(zip(lines.tolist(), counts.tolist()))


def test_a_barrier_interval_coming_back_is_left_to_the_numpy_path():
    rec = random_trace(np.random.default_rng(0), 40)
    rec["block"], rec["space"] = 0, SHARED
    rec["epoch"] = [1] * 20 + [0] * 20
    assert run_scan(rec, SHARED, True, race=True, init=False)[0] == block_scan.IRREGULAR


def test_a_unit_outside_the_shadow_is_left_to_the_numpy_path():
    rec = random_trace(np.random.default_rng(0), 10)
    rec["space"] = SHARED
    rec["addr"][3, :] = UNITS * 4
    rec["mask"][3] = 1
    assert run_scan(rec, SHARED, True, race=False, init=True)[0] == block_scan.UNIT_RANGE


def one_unit(reads: int, write: bool) -> np.ndarray:
    """`reads` warp-wide reads of unit 0 (lane 0 each, warps 0 and 1 in
    turn), then a write of unit 0 (or of unit 1), one block and interval."""
    rec = np.zeros(reads + 1, abi.TRACE_DTYPE)
    rec["space"], rec["mask"], rec["instr"] = SHARED, 1, 1
    rec["warp"] = np.arange(reads + 1) % 2
    rec["instr"][-1] = 0
    rec["addr"][-1, 0] = 0 if write else 4
    return rec


def test_a_possible_race_past_32_accesses_of_a_unit_is_left_to_the_numpy_path():
    assert run_scan(one_unit(40, write=True), SHARED, True, race=True, init=False)[0] == block_scan.CAPPED


def test_a_unit_only_read_past_32_accesses_stays_on_the_native_path():
    assert run_scan(one_unit(40, write=False), SHARED, True, race=True, init=False)[0] == block_scan.OK
