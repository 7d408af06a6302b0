"""What timing mode replays: per warp, the instruction stream's stop points.

Functional execution stays as it is; while it runs, the recorder keeps, per
warp, the points of its instruction stream where the timing engine must look
(Accel-Sim's trace-driven shape):

- MEM: a memory request, issued as the warp's instruction number `at`
  (0-based); the pipe it occupies (shared/MIO or LSU), for how many cycles
  (the memory system's per-request cost: wavefronts, sectors by the level
  that served them), its latency and, for loads, after how many further
  instructions its value is first read (MemInstr.use_distance);
- BARRIER: the warp waits at __syncthreads once it has issued `at`
  instructions;
- EXIT: the warp is done after `at` instructions.

A warp that split into fragments (sm_70+, independent thread scheduling)
is one stream: its fragments' points merged (warp_fragments.py).

Between stop points a warp's instructions need no memory: they issue back to
back whenever the scheduler picks the warp. `WarpPrograms` holds every warp's
items in flat arrays sorted by (warp, position): the engine walks them with
a pointer per warp.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from gpuemu.jit import abi
from gpuemu.machine.thread_scheduling import FRAGMENT_COUNT_MASK, FRAGMENT_ID_SHIFT

from . import native_trace, record_pool
from .native_trace import (BARRIER, EXIT, ITEM_COLUMNS, MEM, PIPE_LSU, PIPE_SHARED,  # noqa: F401
                           SHARED_SPACE, fits)
from .warp_fragments import merge_fragments

KIND_NAMES = {MEM: "mem", BARRIER: "barrier", EXIT: "exit"}
N_PIPES = 2
_OP_LOADS = ("ld", "atom")        # requests whose value a later instruction reads
_ARENA_MIN, _ARENA_MAX = 1 << 12, 1 << 21    # records per block of packed batches


@dataclass
class WarpPrograms:
    """Every warp's stop points, flat. Warp g = block * warps_per_block + warp."""
    warps_per_block: int
    num_blocks: int
    start: np.ndarray     # int64[num_warps]: first item of warp g
    end: np.ndarray       # int64[num_warps]: one past its last item (an EXIT)
    at: np.ndarray        # int[items]: instruction position (see module doc)
    kind: np.ndarray      # int[items]: MEM / BARRIER / EXIT
    pipe: np.ndarray      # int[items]: PIPE_LSU / PIPE_SHARED (MEM only)
    cost: np.ndarray      # int[items]: cycles the pipe is busy (MEM only)
    latency: np.ndarray   # int[items]: cycles from issue to the value (MEM only)
    use: np.ndarray       # int[items]: instructions before the value's first use; -1: none
    line: np.ndarray      # int[items]: counter row of the source line
    instructions: np.ndarray  # int64[num_warps]: instructions each warp executes
    # The same columns as one int32 array [items, 8] (ITEM_COLUMNS), 64-byte aligned, when
    # every number fits int32 (the columns above are then its views); else None
    items: Optional[np.ndarray] = None

    @property
    def num_warps(self) -> int:
        return int(self.start.size)


def aligned_zeros(shape, dtype=np.int64, align: int = 64) -> np.ndarray:
    """Zeroed array whose first element starts on an `align`-byte boundary (a record of
    the native engine then never straddles two cache lines)."""
    n, size = int(np.prod(shape)), np.dtype(dtype).itemsize
    raw = np.zeros(n + align // size, dtype)
    off = (-raw.ctypes.data % align) // size
    return raw[off:off + n].reshape(shape)


class TraceRecorder:
    """Collects stop points during a functional run (executor hooks).

    Barrier arrivals and exits come one at a time from the Python block loop
    (`event`) or in bulk from the native one (machine/block_runner.py), which
    appends rows (warp, kind, icount, line) to `ev_buf` and counts them in
    `ev_state` = [rows, capacity]; `drain_events` moves them out when full."""

    def __init__(self, warps_per_block: int, num_blocks: int, event_capacity: int = 1 << 16) -> None:
        self.nw, self.nb = int(warps_per_block), int(num_blocks)
        self._req: list | None = []         # per batch: int32 records [n, 8] (native_trace.pack) or
        #                                int64 columns (g, icount, pipe, cost, latency, use, line)
        self._counts = np.zeros(self.nw * self.nb, np.int64)   # packed requests per warp
        # the packed batches' storage: blocks that grow to _ARENA_MAX records, filled in
        # turn (a few large allocations, not a fresh small one per batch)
        self._arena = np.zeros((0, len(ITEM_COLUMNS)), np.int32)
        self._used = 0
        self._ev: list = []            # int64[n, 4] chunks, in arrival order
        self._pending: list = []       # rows from `event` not yet in a chunk
        self._splits: list = []        # (warp, parent id, fragment id, count at the split)
        self._fits = True              # the requests' costs, latencies, uses, rows fit int32
        cap = max(int(event_capacity), 1)
        self.ev_buf = np.zeros((cap, 4), np.int64)
        self.ev_state = np.array([0, cap], np.int64)

    def requests(self, rec: np.ndarray, charge, instrs) -> None:
        """A drained trace batch (abi.TRACE_DTYPE records, in issue order) and
        the memory system's ChargeResult for it."""
        if self._req is None:
            raise RuntimeError("TraceRecorder.requests() after release()")
        n = len(rec)
        if n == 0:
            return
        table = _instr_table(instrs)
        if self._used + n > len(self._arena):
            self._arena = record_pool.records(max(n, min(2 * len(self._arena), _ARENA_MAX), _ARENA_MIN),
                                              len(ITEM_COLUMNS))
            self._used = 0
        packed = native_trace.pack(rec, charge.cycles, charge.latency, table[0], table[1], self.nw,
                                   self._counts, self._arena[self._used:self._used + n])
        if packed is not None:
            self._req.append(packed)
            self._used += n
            return
        self._req.append(self._columns_of(rec, charge, table))

    def _columns_of(self, rec: np.ndarray, charge, table) -> tuple:
        """A batch as int64 columns (g, icount, pipe, cost, latency, use, line): its
        numbers need not fit int32."""
        iid = rec["instr"].astype(np.int64)
        use, line = table[0][iid], table[1][iid]
        pipe = np.where(rec["space"] == SHARED_SPACE, PIPE_SHARED, PIPE_LSU).astype(np.int8)
        icount = rec["icount"].astype(np.int64)
        cost = np.maximum(np.asarray(charge.cycles, dtype=np.int64), 1)
        lat = np.maximum(np.asarray(charge.latency, dtype=np.int64), 1)
        self._fits = self._fits and fits(cost=cost, latency=lat, use=use, line=line)
        return (rec["block"].astype(np.int64) * self.nw + rec["warp"],
                icount, pipe, cost, lat, use, line)

    def event(self, block: int, warp: int, kind: int, icount: int, line: int) -> None:
        """A barrier arrival or an exit of warp `warp` of block `block`."""
        if self.ev_state[0]:
            self.drain_events()
        self._pending.append((block * self.nw + warp, kind, icount, line))

    def drain_events(self) -> None:
        """Move the event rows out of the buffer (the native loop's and `event`'s, in order)."""
        if self._pending:
            self._ev.append(np.array(self._pending, dtype=np.int64).reshape(-1, 4))
            self._pending = []
        n = int(self.ev_state[0])
        if n:
            self._ev.append(self.ev_buf[:n].copy())
            self.ev_state[0] = 0

    def split(self, row: np.ndarray) -> None:
        """The frame `row` (int32 view) splits (EV_SPLIT, before split_warp):
        its warp is replayed as one stream (warp_fragments.py)."""
        icount = int(row.view(np.uint8)[abi.F_ICOUNT:abi.F_ICOUNT + 8].view(np.int64)[0])
        self._splits.append((int(row[abi.F_BLOCK // 4]) * self.nw + int(row[abi.F_WARP // 4]),
                             (icount >> FRAGMENT_ID_SHIFT) & FRAGMENT_COUNT_MASK,
                             int(np.uint32(row[abi.F_SPLIT_MASK // 4])), icount & FRAGMENT_COUNT_MASK))

    def programs(self) -> WarpPrograms:
        """Every warp's stop points, sorted by (warp, position): as one int32 array
        (WarpPrograms.items) when every number fits, else as int64 columns."""
        if self._req is None:
            raise RuntimeError("TraceRecorder.programs() after release(): its requests are gone")
        self.drain_events()
        ev = np.concatenate(self._ev) if self._ev else np.zeros((0, 4), np.int64)
        if self._fits and not self._splits and all(isinstance(r, np.ndarray) for r in self._req):
            progs = self._native_programs(ev)
            if progs is not None:
                return progs
        return self._numpy_programs(ev)

    def release(self) -> None:
        """Let the request batches go (the packed ones' storage back to record_pool), once
        programs() is made: the recorder holds no requests any more (programs() refuses)."""
        self._req, self._arena, self._used = None, np.zeros((0, len(ITEM_COLUMNS)), np.int32), 0

    def _native_programs(self, ev: np.ndarray):
        """The counting sort of native_trace (every request batch packed, no warp split);
        None when an event's numbers do not fit or a warp's requests came out of order."""
        nwarps = self.nw * self.nb
        ne = ev.shape[0]
        if not nwarps or ne and (int(ev[:, 0].min()) < 0 or int(ev[:, 0].max()) >= nwarps
                                 or not fits(at=ev[:, 2], line=ev[:, 3])):
            return None
        order = np.argsort((ev[:, 0] << 32) | (2 * ev[:, 2]), kind="stable")
        ev = ev[order]
        events = np.zeros((ne, len(ITEM_COLUMNS)), np.int32)
        events[:, 0], events[:, 1], events[:, 5] = ev[:, 2], ev[:, 1], -1
        events[:, 6], events[:, 7] = ev[:, 3], ev[:, 0]
        counts = self._counts + np.bincount(ev[:, 0], minlength=nwarps)[:nwarps]
        ends = np.cumsum(counts)
        starts = ends - counts
        items = record_pool.records(max(int(ends[-1]), 1), len(ITEM_COLUMNS))[:int(ends[-1])]
        if not native_trace.sort(self._req, events, starts, items):     # (writes every record)
            return None
        instructions = np.zeros(nwarps, np.int64)
        exits = ev[:, 1] == EXIT
        instructions[ev[exits, 0]] = ev[exits, 2]
        return WarpPrograms(warps_per_block=self.nw, num_blocks=self.nb, start=starts, end=ends,
                            instructions=instructions,
                            **{n: items[:, j] for j, n in enumerate(ITEM_COLUMNS[:7])}, items=items)

    def _numpy_programs(self, ev: np.ndarray) -> WarpPrograms:
        """The plain path: every point as int64 columns, sorted with numpy (fragments merged)."""
        nwarps = self.nw * self.nb
        cols = [np.concatenate(c) for c in zip(*(_wide(r) for r in self._req))] if self._req else \
            [np.zeros(0, np.int64)] * 2 + [np.zeros(0, np.int8)] + [np.zeros(0, np.int64)] * 4
        g, at, pipe, cost, lat, use, line = cols
        nr, ne = g.size, ev.shape[0]
        G = np.concatenate([g, ev[:, 0]])
        AT = np.concatenate([at, ev[:, 2]])
        KIND = np.concatenate([np.full(nr, MEM, np.int8), ev[:, 1].astype(np.int8)])
        # request = instruction number `icount` (operations count after their
        # operands): it comes after a barrier/exit reached at the same count
        key = np.concatenate([2 * at + 1, 2 * ev[:, 2]])
        if self._splits:          # warps split into fragments: one stream each
            AT, key, keep = merge_fragments(G, AT, KIND, key, self._splits)
            order = np.lexsort((np.arange(G.size), key, G))
            order = order[keep[order]]
        elif G.size and int(key.max()) < 1 << 32 and int(key.min()) >= 0:
            # (warp, key) in one int64, sorted stably: arrival order within a key
            order = np.argsort((G << 32) | key, kind="stable")
        else:
            order = np.lexsort((np.arange(G.size), key, G))
        counts = np.bincount(G[order], minlength=nwarps)[:nwarps]
        ends = np.cumsum(counts)
        starts = ends - counts
        instructions = np.zeros(nwarps, np.int64)
        exits = order[KIND[order] == EXIT]
        instructions[G[exits]] = AT[exits]
        shape = dict(warps_per_block=self.nw, num_blocks=self.nb, start=starts.astype(np.int64),
                     end=ends.astype(np.int64), instructions=instructions)
        pad = lambda a, v, dt=np.int64: np.concatenate([a, np.full(ne, v, dt)])  # noqa: E731
        columns = (AT[order], KIND[order], pad(pipe, PIPE_LSU, np.int8)[order], pad(cost, 0)[order],
                   pad(lat, 0)[order], pad(use, -1)[order], np.concatenate([line, ev[:, 3]])[order])
        if not (self._fits and fits(at=AT, line=ev[:, 3])):
            return WarpPrograms(**shape, **dict(zip(ITEM_COLUMNS[:7], columns)))
        items = record_pool.records(max(order.size, 1), len(ITEM_COLUMNS))[:order.size]
        for j, col in enumerate(columns + (G[order],)):
            items[:, j] = col
        return WarpPrograms(**shape, **{n: items[:, j] for j, n in enumerate(ITEM_COLUMNS[:7])},
                            items=items)


def _wide(batch) -> tuple:
    """A request batch as int64 columns (g, icount, pipe, cost, latency, use, line)."""
    if not isinstance(batch, np.ndarray):
        return batch
    col = lambda j: batch[:, j].astype(np.int64)  # noqa: E731
    return (col(7), col(0), batch[:, 2].astype(np.int8), col(3), col(4), col(5), col(6))


_TABLES: dict = {}      # id(instrs) -> (instrs, tables), at most _TABLES_MAX kernels
_TABLES_MAX = 256


def _instr_table(instrs) -> tuple:
    """(use distance or -1 for stores, counter row) per MemInstr id."""
    key = id(instrs)
    hit = _TABLES.get(key)
    if hit is not None and hit[0] is instrs:
        return hit[1]
    n = max((i.id for i in instrs), default=-1) + 1
    use = np.full(n, -1, np.int64)
    line = np.zeros(n, np.int64)
    for i in instrs:
        if i.op in _OP_LOADS:
            use[i.id] = getattr(i, "use_distance", 0)
        line[i.id] = i.line
    if len(_TABLES) >= _TABLES_MAX:     # a kernel's tables, not every kernel's forever
        _TABLES.clear()
    _TABLES[key] = (instrs, (use, line))
    return use, line


def programs_from_items(warps_per_block: int, warps: list) -> WarpPrograms:
    """WarpPrograms from hand-written items, for tests and experiments.

    warps[g] (g = block * warps_per_block + warp) lists tuples
    (at, kind, pipe, cost, latency, use, line) in stream order; each list
    must end with an EXIT item."""
    start, end, rows = [], [], []
    for items in warps:
        if not items or items[-1][1] != EXIT:
            raise ValueError("each warp's items must end with an EXIT")
        start.append(len(rows))
        rows.extend(items)
        end.append(len(rows))
    a = np.array(rows, dtype=np.int64).reshape(-1, 7)
    return WarpPrograms(
        warps_per_block=warps_per_block, num_blocks=len(warps) // warps_per_block,
        start=np.array(start, np.int64), end=np.array(end, np.int64), at=a[:, 0],
        kind=a[:, 1].astype(np.int8), pipe=a[:, 2].astype(np.int8), cost=a[:, 3], latency=a[:, 4],
        use=a[:, 5], line=a[:, 6], instructions=np.array([w[-1][0] for w in warps], np.int64))
