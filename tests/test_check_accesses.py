"""Trace records -> per-lane rows, split into address units."""
from __future__ import annotations

import numpy as np

from gpuemu.check.accesses import InstrTables, decode, granule, group_order
from gpuemu.jit import abi
from gpuemu.memory.trace import MemInstr

INSTRS = [MemInstr(0, "st", 8, 4, "shared"), MemInstr(1, "ld", 4, 5, "shared"),
          MemInstr(2, "atom", 4, 6, "global")]


def records(rows) -> np.ndarray:
    rec = np.zeros(len(rows), abi.TRACE_DTYPE)
    for i, (instr, mask, space, addr, epoch, wsync) in enumerate(rows):
        rec[i]["instr"], rec[i]["mask"], rec[i]["space"] = instr, mask, space
        rec[i]["addr"][:] = addr
        rec[i]["epoch"] = epoch | (wsync << 32)
        rec[i]["block"], rec[i]["warp"] = 3, 1
    return rec


def test_granule_is_the_gcd_of_the_space_access_sizes():
    assert granule(INSTRS, "shared") == 4 and granule(INSTRS, "global") == 4
    assert granule([MemInstr(0, "ld", 1, 1, "generic")], "local") == 1


def test_each_active_lane_becomes_rows_of_its_units():
    rec = records([(0, 0b101, 1, np.arange(32) * 8, 2, 7)])
    rows = decode(rec, 100, InstrTables.of(INSTRS), {"shared": 4})["shared"]
    # lanes 0 and 2, 8 bytes each: two 4-byte units per lane
    assert rows.lane.tolist() == [0, 0, 2, 2]
    assert rows.unit.tolist() == [0, 1, 4, 5]
    assert rows.seq.tolist() == [100] * 4 and rows.epoch.tolist() == [2] * 4
    assert rows.wsync.tolist() == [7] * 4 and rows.write.all() and not rows.read.any()
    assert rows.block.tolist() == [3] * 4 and rows.warp.tolist() == [1] * 4


def test_spaces_are_separated_and_atomics_read_and_write():
    rec = records([(1, 1, 1, np.zeros(32), 0, 0), (2, 1, 0, np.full(32, 64), 0, 0)])
    out = decode(rec, 0, InstrTables.of(INSTRS), {"shared": 4, "global": 4})
    assert out["shared"].line.tolist() == [5] and out["global"].unit.tolist() == [16]
    g = out["global"]
    assert g.atomic.tolist() == [True] and g.read.tolist() == [True] and g.write.tolist() == [True]


def test_group_order_keeps_emulation_order_inside_each_group():
    a = np.array([2, 1, 2, 1, 2])
    b = np.array([0, 0, 0, 0, 1])
    order, starts = group_order((a, b))
    assert order.tolist() == [1, 3, 0, 2, 4] and starts.tolist() == [0, 2, 4]
