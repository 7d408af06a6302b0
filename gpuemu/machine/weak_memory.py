"""Weak global memory (launch option memory_model="weak"): late stores.

On a GPU a plain global store of one block may become visible to the
other SMs later than a following store or atomic of the same thread:
only a fence orders them (CUDA C Programming Guide, "Memory Fence
Functions": without __threadfence() the last block of its sum example
"might not read the partial sums stored by other blocks"). This module is
a simplification of the PTX memory model (PTX ISA, "Memory Consistency
Model"): __threadfence() (fence.sc.gpu / membar.gl) releases every global
store the block issued before it; atomics are performed at L2 and are
visible at once, but release nothing; the end of the kernel makes
everything visible.

The machine runs blocks one at a time in this mode (in a seeded-random
order with a seed; a block that spins lets others run, resident_blocks.py:
then what it stored so far becomes visible and the pending stores age, as
when a block finishes). After each block, its plain global stores issued after
the block's last __threadfence() are *held*: their new bytes go to a
pending buffer and the bytes other blocks can see are put back in memory
(kept in a copy of the global allocations, `visible`). A pending buffer is
flushed after a seeded-random number of further blocks (0..MAX_DELAY) or
at the end of the kernel; a later block's own store or atomic to a held
byte wins over the flush. The block itself always read its own stores (it
ran before they were held). Same seed, same delays.
"""
from __future__ import annotations

import numpy as np

from gpuemu.jit import abi
from gpuemu.check.accesses import active_lanes, distinct, spread
from gpuemu.memory.trace import SPACE_CODES, SYNC_PREFIX

MAX_DELAY = 3                    # a held store waits 0..MAX_DELAY further blocks
MODELS = (None, "default", "weak")
# __threadfence_block orders nothing across SMs
FENCE_OPS = tuple(SYNC_PREFIX + f for f in ("threadfence", "threadfence_system"))
GLOBAL = SPACE_CODES["global"]


def parse_memory_model(value) -> bool:
    """Whether `value` (a memory_model launch option) asks for weak memory."""
    if value not in MODELS:
        raise ValueError(f"memory_model must be 'default' or 'weak', got {value!r}")
    return value == "weak"


def record_bytes(rec: np.ndarray, sizes: np.ndarray) -> tuple:
    """(byte addresses, record index) of every byte the records' active lanes touch."""
    r, lane = active_lanes(rec["mask"])
    start = np.ascontiguousarray(rec["addr"])[r, lane] & abi.ADDR_MASK
    addr, origin = spread(start, sizes[rec["instr"][r]])
    return addr, r[origin]


def held_bytes(rec: np.ndarray, op: np.ndarray, sizes: np.ndarray) -> tuple:
    """(every global byte the block wrote, the bytes it holds back) for one
    block's trace records in issue order; `op` is per MemInstr id ('st',
    'atom', 'red', 'sync_threadfence', ...). Held: a plain store after the
    block's last __threadfence, not followed by an atomic on the byte."""
    ops = op[rec["instr"]]
    fences = np.flatnonzero((rec["space"] == abi.SYNC_SPACE) & np.isin(ops, FENCE_OPS))
    last_fence = int(fences[-1]) if len(fences) else -1
    is_global = rec["space"] == GLOBAL
    st = np.flatnonzero(is_global & (ops == "st"))
    at = np.flatnonzero(is_global & np.isin(ops, ("atom", "red")))
    st_addr, st_rec = record_bytes(rec[st], sizes)
    at_addr, at_rec = record_bytes(rec[at], sizes)
    st_rec, at_rec = st[st_rec], at[at_rec]
    written = distinct(np.concatenate([st_addr, at_addr]))
    late = st_rec > last_fence
    held_addr, held_rec = st_addr[late], st_rec[late]
    if len(at_addr) and len(held_addr):      # an atomic after the store on the same byte: its value stands
        order = np.argsort(at_addr, kind="stable")
        a_sorted, a_rec = at_addr[order], at_rec[order]
        uniq, first = np.unique(a_sorted, return_index=True)
        last_at = np.maximum.reduceat(a_rec, first)
        k = np.clip(np.searchsorted(uniq, held_addr), 0, len(uniq) - 1)
        keep = ~((uniq[k] == held_addr) & (last_at[k] > held_rec))
        held_addr = held_addr[keep]
    return written, distinct(held_addr)


class WeakGlobalMemory:
    """The launch's held stores and what other blocks can see."""

    def __init__(self, meta, memory, seed) -> None:
        n = max((i.id for i in meta.instrs), default=-1) + 1
        self.op = np.array([""] * n, dtype=object)
        self.size = np.ones(n, np.int64)
        for i in meta.instrs:
            self.op[i.id] = i.op
            self.size[i.id] = max(i.size, 1)
        self.op = self.op.astype(str)
        self.rng = np.random.default_rng([0 if seed is None else int(seed), 0x57EA])
        allocs = [a for a in memory.live_allocations("global") if a.nbytes]
        self.lo = np.array([a.address for a in allocs], np.int64)
        self.hi = np.array([a.address + a.nbytes for a in allocs], np.int64)
        self.host = [a.host.reshape(-1).view(np.uint8) for a in allocs]
        self.visible = [h.copy() for h in self.host]     # what other blocks can see
        self.pending: list = []      # [blocks left, addresses, new bytes]
        self.records: list = []

    # ------------------------------------------------------------- bytes
    def _locate(self, addr: np.ndarray) -> tuple:
        k = np.searchsorted(self.lo, addr, side="right") - 1
        ok = (k >= 0) & (addr < self.hi[np.maximum(k, 0)])
        return k, ok

    def _get(self, arrays: list, addr: np.ndarray) -> np.ndarray:
        k, ok = self._locate(addr)
        out = np.zeros(len(addr), np.uint8)
        for a in np.unique(k[ok]).tolist():
            s = ok & (k == a)
            out[s] = arrays[a][addr[s] - self.lo[a]]
        return out

    def _put(self, arrays: list, addr: np.ndarray, vals: np.ndarray) -> None:
        k, ok = self._locate(addr)
        for a in np.unique(k[ok]).tolist():
            s = ok & (k == a)
            arrays[a][addr[s] - self.lo[a]] = vals[s]

    # ------------------------------------------------------------ blocks
    def observe(self, rec: np.ndarray) -> None:
        """Trace records of the running block (a drain may come mid-block)."""
        if len(rec):
            self.records.append(rec.copy())

    def block_done(self) -> None:
        """The running block finished: hold its late stores, age the pending ones."""
        self._settle(hold=True)

    def block_spins(self) -> None:
        """The running block spins, waiting for another (machine/resident_blocks.py):
        what it stored so far becomes visible, held by nothing (it goes on
        reading its own stores), and the pending stores age as when a block
        finishes: a store is never held for ever (a GPU's write reaches L2
        in finite time; a consumer spinning on a flag would otherwise never
        see it)."""
        self._settle(hold=False)

    def _settle(self, hold: bool) -> None:
        """The running block's records so far: its writes visible (with
        `hold`, but its late stores, held), the pending stores one block older."""
        rec = np.concatenate(self.records) if self.records else np.zeros(0, abi.TRACE_DTYPE)
        self.records = []
        written, held = held_bytes(rec, self.op, self.size)
        for p in self.pending:           # this block's own writes win over a later flush
            keep = ~np.isin(p[1], written, assume_unique=True)
            p[1], p[2] = p[1][keep], p[2][keep]
        if hold and len(held):
            new = self._get(self.host, held)
            self._put(self.host, held, self._get(self.visible, held))
            self.pending.append([int(self.rng.integers(0, MAX_DELAY + 1)), held, new])
        self._put(self.visible, written, self._get(self.host, written))
        due = [p for p in self.pending if p[0] == 0]
        self.pending = [p for p in self.pending if p[0] > 0]
        for p in self.pending:
            p[0] -= 1
        for p in due:
            self._flush(p)

    def _flush(self, p: list) -> None:
        self._put(self.host, p[1], p[2])
        self._put(self.visible, p[1], p[2])

    def finish(self) -> None:
        """End of the kernel: every held store becomes visible."""
        for p in self.pending:
            self._flush(p)
        self.pending = []
