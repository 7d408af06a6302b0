"""Trace records -> one row per (record, active lane): who touched what.

The JIT records every warp-level memory request (gpuemu/jit/abi.py): its
MemInstr id, active mask, 32 addresses, space, block, warp and the warp's
barrier interval (epoch) and warp-sync interval. The check tools judge
per-thread accesses, so each record becomes one row per active lane.
Addresses become `units` of the kernel's access granule (the gcd of its
access sizes in the space): every access is naturally aligned (memcheck
faults otherwise), so two accesses overlap exactly when they share a unit.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

from gpuemu.jit import abi
from gpuemu.memory.trace import SPACE_CODES, sync_op

LANES = np.arange(abi.WARP, dtype=np.uint32)
OPS_WRITE = {"st", "atom", "red"}
OPS_ATOMIC = {"atom", "red"}


@dataclass
class InstrTables:
    """Per MemInstr id: line, is-write, is-atomic, size (numpy lookups)."""
    line: np.ndarray
    write: np.ndarray
    read: np.ndarray
    atomic: np.ndarray
    size: np.ndarray

    @classmethod
    def of(cls, instrs) -> "InstrTables":
        n = max((i.id for i in instrs), default=-1) + 1
        line = np.zeros(n, np.int32)
        write = np.zeros(n, bool)
        read = np.zeros(n, bool)
        atomic = np.zeros(n, bool)
        size = np.ones(n, np.int64)
        for i in instrs:
            line[i.id] = i.line
            write[i.id] = i.op in OPS_WRITE
            # register spills are the compiler's, not the program's memory:
            # never an uninitialised read (isa/register_spill.py)
            read[i.id] = i.op in ("ld", "atom", "red") and not getattr(i, "spill", False)
            atomic[i.id] = i.op in OPS_ATOMIC
            size[i.id] = max(i.size, 1)
        return cls(line, write, read, atomic, size)


def granule(instrs, space: str) -> int:
    """Bytes of the address unit for `space`: the gcd of the sizes of the
    kernel's accesses that may touch it (generic ones included)."""
    g = 0
    for i in instrs:
        if i.space in (space, "generic") and i.size > 0 and sync_op(i.op) is None:
            g = gcd(g, i.size)
    return g or 1


@dataclass
class Rows:
    """Column arrays, one entry per (access, unit) of one space."""
    seq: np.ndarray       # launch-wide record index (emulation order)
    block: np.ndarray     # linear block index
    warp: np.ndarray
    lane: np.ndarray
    epoch: np.ndarray     # barrier interval
    wsync: np.ndarray     # warp-sync interval
    unit: np.ndarray      # address // granule
    line: np.ndarray
    write: np.ndarray
    read: np.ndarray
    atomic: np.ndarray

    def __len__(self) -> int:
        return int(self.seq.shape[0])

    def take(self, idx) -> "Rows":
        """Rows at idx (indices, a bool mask or a slice)."""
        return Rows(*(getattr(self, f)[idx] for f in FIELDS))

    @staticmethod
    def concat(parts: list) -> "Rows":
        return Rows(*(np.concatenate([getattr(p, f) for p in parts]) for f in FIELDS))

    def thread(self, threads_per_block: int) -> np.ndarray:
        """A launch-wide thread number."""
        return (self.block.astype(np.int64) * threads_per_block + self.warp * abi.WARP
                + self.lane)


FIELDS = tuple(Rows.__dataclass_fields__)


def distinct(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a 1-D array (np.unique; by sorting,
    which numpy 2's hashing np.unique is many times slower than on
    hundreds of thousands of integers)."""
    s = np.sort(np.asarray(a).ravel())
    if len(s) < 2:
        return s
    return s[np.concatenate(([True], s[1:] != s[:-1]))]


def active_lanes(mask: np.ndarray) -> tuple:
    """(record, lane) of every active lane of records with these masks
    (uint32[N]), in record then lane order."""
    bits = np.unpackbits(np.ascontiguousarray(mask, np.uint32).view(np.uint8).reshape(-1, 4),
                         axis=1, bitorder="little")
    return np.nonzero(bits)


def spread(start: np.ndarray, count: np.ndarray) -> tuple:
    """(values, origin): start[i], start[i]+1, ..., start[i]+count[i]-1 for
    each i in order, and the i each value comes from."""
    origin = np.repeat(np.arange(len(start)), count)
    first = np.repeat(np.cumsum(count) - count, count)
    return start[origin] + (np.arange(len(origin)) - first), origin


def decode(rec: np.ndarray, seq0, tables: InstrTables, units: dict) -> dict:
    """{space: Rows} of the memory records of one trace batch, each access
    split into units of units[space] bytes; rows in record then lane order.
    seq0: the launch-wide index of the first record, or each record's."""
    c = np.ascontiguousarray
    seq_of = (lambda r: r + seq0) if np.ndim(seq0) == 0 else (lambda r: np.asarray(seq0)[r])
    space = c(rec["space"])
    out = {}
    masks = c(rec["mask"])
    addr_all = c(rec["addr"]).reshape(-1)
    for name, unit in units.items():
        rs = np.flatnonzero(space == SPACE_CODES[name])
        if not len(rs):
            continue
        r, lane = active_lanes(masks[rs])
        rid = rs[r]
        ins = rec["instr"][rs][r]
        ep = rec["epoch"][rs][r]
        rows = Rows(seq=seq_of(rid), block=rec["block"][rs][r], warp=rec["warp"][rs][r],
                    lane=lane.astype(np.int32),
                    epoch=(ep & 0xFFFFFFFF).astype(np.int32), wsync=(ep >> 32).astype(np.int32),
                    unit=addr_all[rid * abi.WARP + lane] // unit,
                    line=tables.line[ins], write=tables.write[ins], read=tables.read[ins],
                    atomic=tables.atomic[ins])
        nunits = tables.size[ins] // unit
        if (nunits > 1).any():
            units_of, origin = spread(rows.unit, nunits)
            rows = rows.take(origin)
            rows.unit = units_of
        out[name] = rows
    return out


def lane_bits(rec: np.ndarray) -> np.ndarray:
    """bool[N, 32]: the active lanes of each record."""
    masks = np.ascontiguousarray(rec["mask"], np.uint32).view(np.uint8).reshape(-1, 4)
    return np.unpackbits(masks, axis=1, bitorder="little").astype(bool)


def row_count(rec: np.ndarray, tables: InstrTables, unit: int) -> int:
    """How many rows decode gives for these records of one space."""
    lanes = lane_bits(rec).sum(axis=1, dtype=np.int64)
    return int((lanes * (tables.size[rec["instr"]] // unit)).sum())


def unit_span(rec: np.ndarray, tables: InstrTables, unit: int) -> tuple:
    """(lowest, highest) unit each record's active lanes touch (int64[N] each;
    lowest > highest for a record without an active lane)."""
    addr = np.ascontiguousarray(rec["addr"])
    u = addr >> (unit.bit_length() - 1) if unit & (unit - 1) == 0 else addr // unit
    on = lane_bits(rec)
    lo = np.where(on, u, np.iinfo(np.int64).max).min(axis=1)
    hi = np.where(on, u, np.iinfo(np.int64).min).max(axis=1)
    return lo, hi + tables.size[rec["instr"]] // unit - 1


def group_order(keys: tuple) -> tuple:
    """(order, group starts) of rows grouped by equal keys, each group in
    its rows' original order (rows come in emulation order)."""
    n = len(keys[0])
    if len(keys) == 1:
        key = keys[0]
    else:
        key, span = np.zeros(n, np.int64), 1
        for k in reversed(keys):
            lo = int(k.min())
            width = int(k.max()) - lo + 1
            if span * width >= 1 << 62:
                key = None
                break
            key = key + (k.astype(np.int64) - lo) * span
            span *= width
    if key is None:
        order = np.lexsort(tuple(reversed(keys)))
        change = np.zeros(n, bool)
        change[0] = True
        for k in keys:
            ks = k[order]
            change[1:] |= ks[1:] != ks[:-1]
        return order, np.flatnonzero(change)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    change = np.empty(n, bool)
    change[0] = True
    change[1:] = ks[1:] != ks[:-1]
    return order, np.flatnonzero(change)
