"""racecheck: conflicting accesses by different threads that nothing orders.

Judged by CUDA's rules, never by the order the emulator ran things (CUDA C
Programming Guide, "Synchronization Functions" and "Independent Thread
Scheduling"; "Memory Fence Functions"):

- two accesses to one location by different threads conflict when at least
  one writes and they are not both atomic;
- within a block, __syncthreads orders everything before it against
  everything after it (barrier intervals: `epoch`); warps of a block are
  otherwise always concurrent;
- within a warp, lanes run in lock-step on presets without independent
  thread scheduling (before sm_70): two instructions of one warp are ordered.
  From sm_70 on, lanes of a warp are only ordered by __syncwarp (the
  warp-sync interval `wsync`) or __syncthreads. __syncwarp(mask) orders
  memory only among the lanes in mask (the Guide, __syncwarp): a call
  between two accesses orders their lanes when each of them that makes the
  call names the other in its mask (`WarpSyncs`);
- lanes of one instruction are one access, not a hazard;
- blocks are always concurrent. A global access is ordered before another
  (of any thread) by message passing (message_passing.py): the first one's
  block issued a __threadfence after it and then a strong write of a flag,
  and the second one's block read that flag after that write and before
  its access: the fence-then-flag pattern of the Guide's threadfence
  example, and data guarded by a lock. `release` says the first half per
  access, `acquire` (message_passing.Acquired) the second per pair.
  A strong write (atomic or volatile: `atomic` in Rows)
  is also ordered before the accesses of a thread that later made a strong
  read of the same location (`observed`, global memory): strong accesses of
  a location take effect one after another, that read saw the write or a
  later one, and the thread's later accesses follow it in program order
  (the PTX memory model's observation and causality order; the Guide's
  last-block sum resets its counter after its atomicInc so).
- in shared memory, message passing orders a warp's access before another
  warp's of its block, a warp in a block's place: its warp then issued a
  fence of any scope (__threadfence_block too) and a strong shared write
  of a flag, and the other's warp, after that write and before its access,
  a strong read of the flag (`release`, `acquire`: checker._shared_ordering).

`concurrent` is the rule for one pair; `find_races_reference` applies it in
plain Python; `find_races` is the numpy fast path, tested against the
reference.

Per location (and, in shared memory, barrier interval) the first GROUP_CAP
accesses are compared pairwise. Each later access is compared with all the
earlier ones, and for each hazard kind it has, the earliest access it races
with stands for them (one pair counted): a location read by 1024 threads
and then written still races, without a million pairs. The fast path finds
that earliest access among a few per class of access (`_witnesses`), as
shadow-memory race detectors bound their state.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .accesses import Rows, distinct, group_order, spread
from .message_passing import Acquired, ordered, ordered_one
from .range_search import RangeMax

KINDS = ("write-after-write", "read-after-write", "write-after-read")
SYNC_CALL = 33      # a __syncwarp call in WarpSyncs.tables: active lanes, 32 masks
GROUP_CAP = 32      # accesses per location compared pairwise (the first, by emulation order);
                    # each later one is judged against the earliest it races with
LINE_MASK = (1 << 21) - 1     # source lines below two million
PER_RECORD = 2      # of one warp-wide access, two lanes stand for all (any other thread
                    # differs from one of them; lanes of one access never race each other)


def concurrent(b1, e1, w1, s1, r1, b2, e2, w2, s2, r2, its: bool, released: bool = False) -> bool:
    """May access 1 (block, epoch, warp, wsync, record) and access 2 of two
    different threads run unordered? (The module docstring's rules.)"""
    if released:
        return False
    if b1 != b2:
        return True
    if e1 != e2:
        return False
    if w1 != w2:
        return True
    if r1 == r2:
        return False
    return its and s1 == s2


def syncwarp_orders(active: int, masks, lane1: int, lane2: int) -> bool:
    """Does one __syncwarp call (its active lanes, each lane's mask argument)
    order lanes lane1 and lane2? One of them makes it, and each of them that
    makes it names the other (the other may make it in another branch: the
    calls of one mask are one barrier)."""
    on1, on2 = active >> lane1 & 1, active >> lane2 & 1
    return bool((on1 or on2) and (not on1 or masks[lane1] >> lane2 & 1)
                and (not on2 or masks[lane2] >> lane1 & 1))


class WarpSyncs:
    """The __syncwarp calls of a launch: per (block, warp) and warp-sync
    count k (the k-th call of the warp: accesses after it have wsync >= k),
    the active lanes and each lane's mask argument. Warps whose every call
    is made by all their lanes naming all of them (plain) keep the interval
    rule: two accesses are ordered when a call came between."""

    def __init__(self) -> None:
        self.parts: list = []
        self.partial = np.zeros(0, np.int64)    # block << 32 | warp of a call that is not plain, sorted
        self._table = None

    def add(self, block, warp, k, active, masks, existing) -> None:
        """Calls: arrays (masks: uint32[N, 32]; existing: the warp's lanes).
        A plain call's masks are not kept: they name the warp's lanes."""
        existing = existing.astype(np.int64)
        whole = active.astype(np.int64) == existing
        plain = whole & (masks == 0xFFFFFFFF).all(axis=1) if whole.any() else whole
        if not plain.all():
            some = np.flatnonzero(whole & ~plain)
            ex = existing[some, None]
            plain[some] = ((masks[some].astype(np.int64) & ex) == ex).all(axis=1)
        row = np.full(len(plain), -1, np.int64)      # of this part's masks
        if not plain.all():
            bw = distinct(block[~plain].astype(np.int64) << 32 | warp[~plain].astype(np.int64))
            # blocks run in order: a batch's warps mostly come after those before
            if len(self.partial) and bw[0] <= self.partial[-1]:
                bw = distinct(np.concatenate([self.partial, bw]))
            else:
                bw = np.concatenate([self.partial, bw])
            self.partial = bw
            row[~plain] = np.arange(int((~plain).sum()))
        self.parts.append((block, warp, k, active, existing, row, np.ascontiguousarray(masks[~plain])))
        self._table = None

    def partial_rows(self, block: np.ndarray, warp: np.ndarray) -> np.ndarray:
        """bool per (block, warp): a warp with a call that is not plain."""
        if not len(self.partial):
            return np.zeros(len(block), bool)
        q = np.asarray(block, np.int64) << 32 | np.asarray(warp, np.int64)
        i = np.minimum(np.searchsorted(self.partial, q), len(self.partial) - 1)
        return self.partial[i] == q

    def _calls(self, lo: int = None, hi: int = None) -> tuple:
        """(sorted keys, active lanes, existing lanes, kept-mask row) of the
        calls of blocks lo..hi (every block: None), and the kept masks.
        Blocks run one after another: a few batches hold a block's calls."""
        parts = [p for p in self.parts if lo is None or (len(p[0]) and p[0].min() <= hi and p[0].max() >= lo)]
        if not parts:
            z = np.zeros(0, np.int64)
            return z, z, z, z, np.zeros((0, 32), np.int64)
        if self._table is not None and self._table[0] == (lo, hi):
            return self._table[1]
        cols = [np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(5)]
        off = np.cumsum([0] + [len(p[6]) for p in parts])
        row = np.concatenate([np.where(p[5] < 0, -1, p[5] + o) for p, o in zip(parts, off)])
        b, w, k = cols[:3]
        key = (b << 32 | w) * (1 << 24) + k
        o = np.argsort(key, kind="stable")
        table = (key[o], cols[3][o], cols[4][o], row[o],
                 np.concatenate([p[6] for p in parts]).reshape(-1, 32).astype(np.int64))
        self._table = ((lo, hi), table)
        return table

    def _find(self, table, block, warp, k) -> tuple:
        """(index of call k of the warp in `table`, found?) per entry."""
        keys = table[0]
        if not len(keys):
            z = np.zeros(np.shape(k), np.int64)
            return z, z != 0
        q = (np.asarray(block, np.int64) << 32 | np.asarray(warp, np.int64)) * (1 << 24) + k
        i = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
        return i, keys[i] == q

    @staticmethod
    def _mask(table, i, lane) -> np.ndarray:
        _, _, existing, row, kept = table
        return np.where(row[i] < 0, existing[i], kept[np.maximum(row[i], 0), lane] if len(kept) else 0)

    def tables(self, blocks: np.ndarray, nwarps: int) -> tuple:
        """For block_scan: (base, first block, nwarps, calls): the k-th call
        of warp w of block b, as [active lanes, 32 masks] (active -1: not in
        the trace), is row base[(b - first block) * nwarps + w] + k of calls;
        base -1 for a warp without a partial call (None: no such warp)."""
        lo, hi = int(blocks.min()), int(blocks.max())
        keys, act, existing, row, kept = self._calls(lo, hi)
        bw = keys // (1 << 24)
        b, w, k = bw >> 32, bw & 0xFFFFFFFF, keys % (1 << 24)
        sel = np.flatnonzero((b >= lo) & (b <= hi) & self.partial_rows(b, w))
        if not len(sel):
            return None
        slot = (b[sel] - lo) * nwarps + w[sel]         # ascending: keys sort by block, warp
        head = np.ones(len(slot), bool)
        head[1:] = slot[1:] != slot[:-1]
        slots, first = slot[head], np.flatnonzero(head)
        last = np.append(first[1:], len(sel)) - 1
        size = k[sel][last] + 1                  # calls 0..K of each warp (keys sort by k)
        start = np.cumsum(size) - size
        base = np.full((hi - lo + 1) * nwarps, -1, np.int64)
        base[slots] = start
        calls = np.zeros((int(size.sum()), SYNC_CALL), np.int64)
        calls[:, 0] = -1
        at = start[np.searchsorted(slots, slot)] + k[sel]
        i = sel
        calls[at, 0] = act[i]
        calls[at, 1:] = np.where(row[i][:, None] < 0, existing[i][:, None],
                                 kept[np.maximum(row[i], 0)] if len(kept) else 0)
        return base, lo, nwarps, calls.ravel()

    def ordered_reference(self, block: int, warp: int, lane1: int, s1: int, lane2: int, s2: int) -> bool:
        """Is there a call between warp-sync counts s1 and s2 ordering the
        two lanes? (plain Python; a call missing from the trace orders)"""
        table = self._calls(block, block)
        for k in range(min(s1, s2) + 1, max(s1, s2) + 1):
            i, found = self._find(table, block, warp, k)
            if not found:
                return True
            masks = {lane: int(self._mask(table, i, lane)) for lane in (lane1, lane2)}
            if syncwarp_orders(int(table[1][i]), masks, lane1, lane2):
                return True
        return False

    def ordered(self, block, warp, lane1, s1, lane2, s2) -> np.ndarray:
        """ordered_reference, vectorised over pairs."""
        lo, hi = np.minimum(s1, s2).astype(np.int64), np.maximum(s1, s2).astype(np.int64)
        out = np.zeros(len(lo), bool)
        if not len(lo):
            return out
        table = self._calls(int(block.min()), int(block.max()))
        act = table[1]
        l1, l2 = lane1.astype(np.int64), lane2.astype(np.int64)
        todo = np.flatnonzero(lo < hi)
        k = lo + 1
        while len(todo):
            i, found = self._find(table, block[todo], warp[todo], k[todo])
            x, y = l1[todo], l2[todo]
            on1, on2 = (act[i] >> x) & 1 == 1, (act[i] >> y) & 1 == 1
            names1 = (self._mask(table, i, x) >> y) & 1 == 1
            names2 = (self._mask(table, i, y) >> x) & 1 == 1
            hit = ~found | ((on1 | on2) & (~on1 | names1) & (~on2 | names2))
            out[todo[hit]] = True
            k[todo] += 1
            todo = todo[~hit & (k[todo] <= hi[todo])]
        return out


def hazard(write1: bool, atomic1: bool, write2: bool, atomic2: bool) -> Optional[str]:
    """The hazard of access 1 then access 2 (emulation order), or None."""
    if atomic1 and atomic2:
        return None
    if write1 and write2:
        return "write-after-write"
    if write1:
        return "read-after-write"
    if write2:
        return "write-after-read"
    return None


def lines_of(kind: str, line1: int, line2: int) -> tuple:
    """(line, other_line) of a finding: the write first; for two writes the
    later line first."""
    if kind == "write-after-write":
        return max(line1, line2), min(line1, line2)
    if kind == "read-after-write":
        return line1, line2
    return line2, line1


def find_races_reference(rows: Rows, keys: tuple, tpb: int, its: bool,
                         release: Optional[np.ndarray] = None,
                         acquire: Optional[np.ndarray] = None, observed: bool = False,
                         syncs: Optional[WarpSyncs] = None) -> dict:
    """{(kind, line, other_line): [count, row, other_row]} over the pairs of
    rows with equal keys (plain Python; `release[i]`/`acquire[j]`, `observed`,
    `syncs`: see the module docstring): every pair among a group's first GROUP_CAP
    rows, and for each later row, per hazard kind, the pair with the
    earliest row it races with."""
    tid = rows.thread(tpb)
    groups: dict = {}
    for i in range(len(rows)):
        groups.setdefault(tuple(int(k[i]) for k in keys), []).append(i)
    out: dict = {}
    chain: dict = {}      # row -> seq of its thread's latest strong read of the group before it

    def race(x, y) -> Optional[str]:
        if tid[x] == tid[y]:
            return None
        kind = hazard(rows.write[x], rows.atomic[x], rows.write[y], rows.atomic[y])
        if kind is None:
            return None
        rel = ordered_one(release, acquire, x, y)
        rel |= bool(observed and rows.atomic[x] and rows.write[x] and rows.seq[x] <= chain[y])
        if concurrent(rows.block[x], rows.epoch[x], rows.warp[x], rows.wsync[x], rows.seq[x],
                      rows.block[y], rows.epoch[y], rows.warp[y], rows.wsync[y], rows.seq[y], its, rel):
            return kind
        # a warp-sync interval apart: unless a __syncwarp between orders the two lanes
        if (syncs is None or rel or not its or rows.block[x] != rows.block[y]
                or rows.epoch[x] != rows.epoch[y] or rows.warp[x] != rows.warp[y]
                or rows.seq[x] == rows.seq[y]):
            return None
        if syncs.ordered_reference(int(rows.block[x]), int(rows.warp[x]), int(rows.lane[x]),
                                   int(rows.wsync[x]), int(rows.lane[y]), int(rows.wsync[y])):
            return None
        return kind

    def add(kind, x, y):
        line, other = lines_of(kind, int(rows.line[x]), int(rows.line[y]))
        first, second = (x, y) if line == rows.line[x] and kind != "write-after-read" else (y, x)
        e = out.setdefault((kind, line, other), [0, first, second])
        e[0] += 1

    for idx in groups.values():
        idx = sorted(idx, key=lambda i: int(rows.seq[i]))
        if observed:
            for i in idx:
                chain[i] = max((int(rows.seq[a]) for a in idx if tid[a] == tid[i] and rows.atomic[a]
                                and rows.read[a] and rows.seq[a] < rows.seq[i]), default=-1)
            # of a record's lanes, those of the earliest chains are kept
            idx = sorted(idx, key=lambda i: (int(rows.seq[i]), chain[i]))
        per: dict = {}
        kept = []
        for i in idx:
            per[int(rows.seq[i])] = per.get(int(rows.seq[i]), 0) + 1
            if per[int(rows.seq[i])] <= PER_RECORD:
                kept.append(i)
        head = kept[:GROUP_CAP]
        for a in range(len(head)):
            for b in range(a + 1, len(head)):
                kind = race(head[a], head[b])
                if kind is not None:
                    add(kind, head[a], head[b])
        for b in range(GROUP_CAP, len(kept)):
            earliest: dict = {}
            for x in kept[:b]:
                kind = race(x, kept[b])
                if kind is not None:
                    earliest.setdefault(kind, x)
            for kind, x in earliest.items():
                add(kind, x, kept[b])
    return out


def _pairs(order: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple:
    """All (earlier, later) row pairs within each group (first GROUP_CAP rows)."""
    xs, ys = [], []
    sizes = np.minimum(sizes, GROUP_CAP)
    for g in np.unique(sizes):
        if g < 2:
            continue
        st = starts[sizes == g]
        ids = order[st[:, None] + np.arange(g)[None, :]]
        iu, ju = np.triu_indices(int(g), 1)
        xs.append(ids[:, iu].ravel())
        ys.append(ids[:, ju].ravel())
    if not xs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(xs), np.concatenate(ys)


def _racing(rows: Rows, tid: np.ndarray, x: np.ndarray, y: np.ndarray, its: bool,
            release: Optional[np.ndarray], acquire: Optional[np.ndarray],
            chain: Optional[np.ndarray] = None, syncs: Optional[WarpSyncs] = None) -> np.ndarray:
    """Do rows x[k] (earlier) and y[k] race? (`hazard` and `concurrent`,
    vectorised; chain: `_chains`; syncs: the warps' __syncwarp calls.)"""
    wx, wy = rows.write[x], rows.write[y]
    ok = (tid[x] != tid[y]) & (wx | wy) & ~(rows.atomic[x] & rows.atomic[y])
    rel = ordered(release, acquire, x, y)
    if chain is not None:
        rel |= rows.atomic[x] & rows.write[x] & (rows.seq[x] <= chain[y])
    same_block = rows.block[x] == rows.block[y]
    unsynced = rows.wsync[x] == rows.wsync[y]
    if its and syncs is not None and len(syncs.partial):
        # warps with a partial __syncwarp: which calls between order the lanes
        ask = np.flatnonzero(ok & ~rel & ~unsynced & same_block & (rows.warp[x] == rows.warp[y])
                             & (rows.epoch[x] == rows.epoch[y]) & (rows.seq[x] != rows.seq[y]))
        ask = ask[syncs.partial_rows(rows.block[x[ask]], rows.warp[x[ask]])]
        if len(ask):
            xa, ya = x[ask], y[ask]
            unsynced[ask] = ~syncs.ordered(rows.block[xa], rows.warp[xa], rows.lane[xa],
                                           rows.wsync[xa], rows.lane[ya], rows.wsync[ya])
    inblock = ((rows.epoch[x] == rows.epoch[y])
               & ((rows.warp[x] != rows.warp[y])
                  | (its & (rows.seq[x] != rows.seq[y]) & unsynced)))
    return ok & np.where(same_block, inblock, True) & ~rel


def _rank(cols: tuple) -> np.ndarray:
    """A dense rank of each row's tuple of `cols` (equal tuples, equal ranks)."""
    o, st = group_order(cols)
    change = np.zeros(len(o), np.int64)
    change[st] = 1
    rank = np.empty(len(o), np.int64)
    rank[o] = np.cumsum(change) - 1
    return rank


class _Runs:
    """The rows of each key in index order: the first one past an index, and
    after a row the next one of its key whose `attr` differs from its."""

    def __init__(self, key: np.ndarray, attr: Optional[np.ndarray]) -> None:
        self.n = n = len(key)
        self.at = np.argsort(key, kind="stable")      # rows by (key, index)
        ks = key[self.at]
        head = np.ones(n, bool)
        head[1:] = ks[1:] != ks[:-1]
        self.keys = ks[head]
        run = np.cumsum(head) - 1
        self.comb = run * (n + 1) + self.at           # ascending
        self.pos = np.empty(n, np.int64)
        self.pos[self.at] = np.arange(n)
        if attr is not None:
            av = attr[self.at]
            seg = head.copy()
            seg[1:] |= av[1:] != av[:-1]
            # the start of the segment after each position's, if in its run
            nxt = np.flatnonzero(seg)
            after = np.searchsorted(nxt, np.arange(n), "right")
            j = np.append(nxt, n)[after]
            jc = np.minimum(j, n - 1)
            self.next = np.where((j < n) & (run[jc] == run), self.at[jc], -1)

    def first(self, q: np.ndarray, past: np.ndarray) -> np.ndarray:
        """The first row of key q[k] with an index above past[k], or -1."""
        r = np.minimum(np.searchsorted(self.keys, q), len(self.keys) - 1)
        j = np.searchsorted(self.comb, r * (self.n + 1) + past + 1)
        jc = np.minimum(j, self.n - 1)
        ok = (self.keys[r] == q) & (j < self.n) & (self.comb[jc] // (self.n + 1) == r)
        return np.where(ok, self.at[jc], -1)

    def other(self, i: np.ndarray) -> np.ndarray:
        """After row i[k] (or -1), the next of its key with another attr, or -1."""
        return np.where(i >= 0, self.next[self.pos[np.maximum(i, 0)]], -1)


def _levels(rows: Rows, tid: np.ndarray, r: np.ndarray, g: np.ndarray) -> list:
    """[(key, attr)] of rows r (group g) for `_witnesses`: by group; by
    group, block and interval; by group, block, interval, warp and warp-sync
    interval; each with what its second witness differs in."""
    be = _rank((rows.block[r], rows.epoch[r]))
    cell = _rank((rows.block[r], rows.epoch[r], rows.warp[r], rows.wsync[r]))
    return [(g, rows.block[r]), (g * (int(be.max()) + 1) + be, rows.warp[r]),
            (g * (int(cell.max()) + 1) + cell, tid[r])]


def _witnesses(levels: list, cls: np.ndarray, later: np.ndarray, c: int, past: np.ndarray) -> list:
    """For each row `later` of a group's rows (emulation order; `_levels`,
    class of access cls), the few rows of class c past index `past` that
    stand for all of them in finding the earliest one it races with.

    Two accesses of different threads race (class and `past` aside) when
    (D1) their blocks differ, or, in one block and barrier interval,
    (D2) their warps differ, or (D3) in one warp-sync interval of one warp
    their records and threads differ. Let x be the earliest such row (of
    class c, past `past`) for a later row y. Each row below is the first
    such with a property x has, so it is no later than x; the cases show
    one of them races with y, so it is x:
    - D1: B1, the first; if B1's block is y's, B2, the first of another
      block than B1's (x's block is not B1's);
    - D2 (y's block and interval hold x): E1, their first; if E1's warp is
      y's, E2, their first of another warp than E1's;
    - D3 (y's block, interval, warp and warp-sync interval hold x, and E1
      is of y's warp, else E1 races): F, their first, races unless it
      shares y's record or thread. Rows come in emulation order, a record's
      lanes together: in y's record, so are all rows between F and y, x
      among them, which cannot be. Of y's thread: G1, their first of another
      thread than F's, comes no later than x, so in an earlier record than
      y's, and races."""
    sub = np.flatnonzero(cls == c)
    out = []
    for key, attr in levels:
        runs = _Runs(key[sub], attr[sub])
        # runs index the class's rows: past and the answers in that numbering
        f = runs.first(key[later], np.searchsorted(sub, past, "right") - 1)
        for w in (f, runs.other(f)):
            out.append(np.where(w >= 0, sub[np.maximum(w, 0)], -1))
    return out


def _chains(rows: Rows, tid: np.ndarray, order: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Per row (of `order`, group gid): the seq of its thread's latest strong
    read (atomic, read) of the group before it, or -1."""
    o = np.lexsort((rows.seq[order], tid[order], gid))
    rr, tt, gg, sq = order[o], tid[order][o], gid[o], rows.seq[order][o]
    run = np.ones(len(rr), bool)
    run[1:] = (tt[1:] != tt[:-1]) | (gg[1:] != gg[:-1])
    rid = np.cumsum(run) - 1
    span = int(rows.seq.max()) + 2
    best = np.maximum.accumulate(np.where(rows.atomic[rr] & rows.read[rr], sq, -1) + 1 + rid * span)
    # before a row: the best up to the row before its seq's first row in the run
    tie = run.copy()
    tie[1:] |= sq[1:] != sq[:-1]
    first = np.maximum.accumulate(np.where(tie, np.arange(len(rr)), 0))
    prev = np.where(run[first], rid * span, best[np.maximum(first - 1, 0)])
    chain = np.full(len(rows), -1, np.int64)
    chain[rr] = prev - rid * span - 1
    return chain


def _later_pairs(rows: Rows, tid: np.ndarray, order: np.ndarray, starts: np.ndarray,
                 sizes: np.ndarray, its: bool, release: Optional[np.ndarray],
                 acquire: Optional[np.ndarray], chain: Optional[np.ndarray],
                 syncs: Optional[WarpSyncs]) -> tuple:
    """(earlier, later) row pairs for the rows past the first GROUP_CAP of
    each group: per later row and hazard kind, the earliest row of its group
    it races with (found among `_witnesses`)."""
    none = np.zeros(0, np.int64), np.zeros(0, np.int64)
    big = sizes > GROUP_CAP
    if not big.any():
        return none
    starts, sizes = starts[big], sizes[big]
    pos = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    r = order[np.repeat(starts, sizes) + pos]
    g = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    rel = release[r] if release is not None else np.zeros(len(r), bool)
    cls = (rows.write[r].astype(np.int64) | rows.atomic[r].astype(np.int64) << 1
           | rel.astype(np.int64) << 2)
    later = np.flatnonzero(pos >= GROUP_CAP)
    # a strong write at or before the later row's chain is ordered before it:
    # past that index only (rows of a group come in seq order)
    no_past = np.full(len(later), -1, np.int64)
    chain_past = no_past
    if chain is not None:
        span = int(rows.seq.max()) + 2
        chain_past = np.searchsorted(g * span + rows.seq[r], g[later] * span + chain[r[later]],
                                     "right") - 1
    big_i = np.iinfo(np.int64).max
    best = np.full((3, len(later)), big_i)        # per hazard kind (KINDS order)
    levels = _levels(rows, tid, r, g)
    for c in np.unique(cls).tolist():
        past = chain_past if c & 3 == 3 else no_past     # strong writes
        for xi in _witnesses(levels, cls, later, c, past):
            ok = (xi >= 0) & (xi < later)
            ok[ok] = _racing(rows, tid, r[xi[ok]], r[later[ok]], its, release, acquire, chain, syncs)
            wx, wy = rows.write[r[xi]], rows.write[r[later]]
            kind = np.where(wx & wy, 0, np.where(wx, 1, 2))
            for k in range(3):
                sel = ok & (kind == k)
                best[k, sel] = np.minimum(best[k, sel], xi[sel])
    if isinstance(acquire, Acquired):
        _released_pairs(rows, tid, r, g, sizes, cls, later, chain_past, best, its, release, acquire,
                        chain, syncs)
    if its and syncs is not None and len(syncs.partial):
        # in a warp with a partial __syncwarp the warp-sync interval does not
        # say which lanes are ordered: every earlier row of the warp is a candidate
        y = later[syncs.partial_rows(rows.block[r[later]], rows.warp[r[later]])]
        if len(y):
            key = _rank((g, rows.block[r], rows.epoch[r], rows.warp[r]))
            at = np.argsort(key, kind="stable")
            pos = np.empty(len(r), np.int64)
            pos[at] = np.arange(len(r))
            head = np.searchsorted(key[at], key[y])
            xi, origin = spread(head, pos[y] - head)
            xi, yy = at[xi], y[origin]
            ok = _racing(rows, tid, r[xi], r[yy], its, release, acquire, chain, syncs)
            _keep_earliest(rows, r, best, xi[ok], np.searchsorted(later, yy[ok]), later)
    xs, ys = [], []
    for k in range(3):
        sel = best[k] < big_i
        xs.append(r[best[k, sel]])
        ys.append(r[later[sel]])
    return np.concatenate(xs), np.concatenate(ys)


PAIRS_AT_ONCE = 1 << 22     # _released_pairs' pairs judged per numpy pass
# _released_pairs' comparisons with every earlier released row, at most per
# find_races call: past them a later row that read several flags is compared
# with the witnesses only (without a bound, a 4096-block check where every
# block published and read 256 atomic bins and all read one location took 28 s,
# 2.3 s when message passing was judged per row; 1M pairs are some 0.5 s here)
EVERY_EARLIER_PAIRS = 1 << 20
SEARCH_ROUNDS = 16          # searches past a found access that does not race, before the exhaustive way


def _released_pairs(rows: Rows, tid: np.ndarray, r: np.ndarray, g: np.ndarray, sizes: np.ndarray,
                    cls: np.ndarray, later: np.ndarray, chain_past: np.ndarray, best: np.ndarray,
                    its: bool, release, acquire: Acquired, chain, syncs) -> None:
    """_later_pairs for released rows where message passing is judged per
    pair (an Acquired): whether a released row races with a later row
    depends on which agents the later row's agent acquired from, which
    `_witnesses` does not follow (nor which fence follows each released
    row). For each later row that acquired anything and each class of
    released rows, the earliest row that message passing does not order
    before it and that races with it is found (into `best`): where the
    later row's agent read one flag, among the rows whose agent published
    that flag after the row's fence only at or after the agent's latest
    read of it, or never (range_search), the first that races; otherwise by
    comparing it with every earlier released row."""
    ys = np.flatnonzero(acquire.any[r[later]] & ~acquire.handed[r[later]])   # (handed: all alike)
    if not len(ys):
        return
    budget = [EVERY_EARLIER_PAIRS]
    first = np.cumsum(sizes) - sizes           # each group's first index into r
    nflags, flag, read = acquire.reads_before(r[later[ys]])
    wy, ay = rows.write[r[later[ys]]], rows.atomic[r[later[ys]]]
    for c in np.unique(cls).tolist():
        if not c & 4:
            continue
        hazard_ = (bool(c & 1) | wy) & ~(bool(c & 2) & ay)
        sub = np.flatnonzero(cls == c)
        past = chain_past[ys] if c & 3 == 3 else np.full(len(ys), -1, np.int64)
        lo = np.searchsorted(sub, np.maximum(first[g[later[ys]]], past + 1))
        hi = np.searchsorted(sub, later[ys])
        ask = hazard_ & (lo < hi)
        one = np.flatnonzero(ask & (nflags == 1))
        rest = np.flatnonzero(ask & (nflags > 1))
        for f in np.unique(flag[one]).tolist():
            q = one[flag[one] == f]
            v = RangeMax(acquire.publication_after(acquire.agent[r[sub]], np.full(len(sub), f),
                                                   acquire.after[r[sub]]))
            bound, start = read[q], lo[q]
            for _ in range(SEARCH_ROUNDS):
                i = v.first_at_least(start, hi[q], bound)
                hit = i >= 0
                xi = sub[np.maximum(i, 0)]
                ok = hit.copy()
                ok[ok] = _racing(rows, tid, r[xi[ok]], r[later[ys[q[ok]]]], its, release, acquire, chain, syncs)
                _keep_earliest(rows, r, best, xi[ok], ys[q[ok]], later)
                again = hit & ~ok
                q, start, bound = q[again], i[again] + 1, bound[again]
                if not len(q):
                    break
            rest = np.concatenate([rest, q])
        _every_earlier(rows, tid, r, sub, lo, hi, ys, rest, later, best, its, release, acquire, chain, syncs,
                       budget)


def _keep_earliest(rows: Rows, r: np.ndarray, best: np.ndarray, xi: np.ndarray, col: np.ndarray,
                   later: np.ndarray) -> None:
    """best[kind, col] lowered to xi where row r[xi] races with later row r[later[col]]."""
    wx = rows.write[r[xi]]
    kind = np.where(wx & rows.write[r[later[col]]], 0, np.where(wx, 1, 2))
    for k in range(3):
        sel = kind == k
        np.minimum.at(best[k], col[sel], xi[sel])


def _every_earlier(rows: Rows, tid: np.ndarray, r: np.ndarray, sub: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray, ys: np.ndarray, q: np.ndarray, later: np.ndarray, best: np.ndarray,
                   its: bool, release, acquire, chain, syncs, budget: list) -> None:
    """Later rows r[later[ys[q]]] compared with every row sub[lo:hi] of
    theirs, PAIRS_AT_ONCE pairs at a time (into `best`), while budget[0]
    pairs are left (the rest keep what the witnesses found)."""
    count = np.maximum(hi[q] - lo[q], 0)
    ends = np.cumsum(count)
    keep = int(np.searchsorted(ends, budget[0], "right"))
    q, count, ends = q[:keep], count[:keep], ends[:keep]
    budget[0] -= int(ends[-1]) if keep else 0
    at = 0
    while at < len(q):
        stop = max(int(np.searchsorted(ends, (ends[at] - count[at]) + PAIRS_AT_ONCE, "right")), at + 1)
        pos, origin = spread(lo[q[at:stop]], count[at:stop])
        xi, col = sub[pos], ys[q[at:stop]][origin]
        ok = _racing(rows, tid, r[xi], r[later[col]], its, release, acquire, chain, syncs)
        _keep_earliest(rows, r, best, xi[ok], col[ok], later)
        at = stop


def find_races(rows: Rows, keys: tuple, tpb: int, its: bool,
               release: Optional[np.ndarray] = None, acquire: Optional[np.ndarray] = None,
               observed: bool = False, syncs: Optional[WarpSyncs] = None) -> dict:
    """find_races_reference, vectorised: group rows by keys, keep groups with
    two threads and a write, compare their pairs with numpy."""
    n = len(rows)
    if n < 2:
        return {}
    order, starts = group_order(keys)
    sizes = np.diff(np.append(starts, n))
    # a group of one row, or of strong accesses only, has no pair that races
    big = (sizes >= 2) & (np.add.reduceat((~rows.atomic[order]).astype(np.int64), starts) > 0)
    if not big.any():
        return {}
    tid = rows.thread(tpb)
    # only rows of groups with two or more rows take part from here on, and
    # of each warp-wide access in a group its first PER_RECORD lanes
    starts, sizes = starts[big], sizes[big]
    member = np.repeat(starts, sizes) + (np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes))
    order = order[member]
    gid = np.repeat(np.arange(len(starts)), sizes)
    chain = None
    if observed and (rows.atomic[order] & rows.read[order]).any():
        chain = _chains(rows, tid, order, gid)
        # of a record's lanes, those of the earliest chains first (they stand for the others)
        o = np.lexsort((chain[order], rows.seq[order], gid))
        order, gid = order[o], gid[o]
    sq = rows.seq[order]
    run = np.ones(len(order), bool)
    run[1:] = (sq[1:] != sq[:-1]) | (gid[1:] != gid[:-1])
    run_start = np.maximum.accumulate(np.where(run, np.arange(len(order)), 0))
    keep = (np.arange(len(order)) - run_start) < PER_RECORD
    order, gid = order[keep], gid[keep]
    sizes = np.bincount(gid, minlength=len(starts))
    nz = sizes >= 2
    order = order[np.repeat(nz, sizes)]
    sizes = sizes[nz]
    if not len(sizes):
        return {}
    starts = np.cumsum(sizes) - sizes
    t = tid[order]
    w = rows.write[order]
    na = ~rows.atomic[order]
    cand = ((np.minimum.reduceat(t, starts) != np.maximum.reduceat(t, starts))
            & (np.add.reduceat(w.astype(np.int64), starts) > 0)
            & (np.add.reduceat(na.astype(np.int64), starts) > 0))
    if not cand.any():
        return {}
    x, y = _pairs(order, starts[cand], sizes[cand])
    lx, ly = _later_pairs(rows, tid, order, starts[cand], sizes[cand], its, release, acquire, chain,
                          syncs)
    x, y = np.concatenate([x, lx]), np.concatenate([y, ly])
    ok = _racing(rows, tid, x, y, its, release, acquire, chain, syncs)
    x, y = x[ok], y[ok]
    wx, wy = rows.write[x], rows.write[y]
    if not len(x):
        return {}
    kind = np.where(wx & wy, 0, np.where(wx, 1, 2))
    lx, ly = rows.line[x], rows.line[y]
    line = np.where(kind == 0, np.maximum(lx, ly), np.where(kind == 1, lx, ly))
    other = np.where(kind == 0, np.minimum(lx, ly), np.where(kind == 1, ly, lx))
    first = np.where((kind == 1) | ((kind == 0) & (lx == line)), x, y)
    second = np.where(first == x, y, x)
    # one int64 per (kind, line, other): np.unique over rows (axis=0) is slow
    key = (kind.astype(np.int64) << 42) | (line.astype(np.int64) << 21) | other.astype(np.int64)
    uniq, idx, counts = np.unique(key, return_index=True, return_counts=True)
    return {(KINDS[int(k >> 42)], int(k >> 21 & LINE_MASK), int(k & LINE_MASK)):
            [int(c), int(first[i]), int(second[i])] for k, i, c in zip(uniq.tolist(), idx, counts)}
