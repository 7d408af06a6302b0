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
  warp-sync interval `wsync`) or __syncthreads;
- lanes of one instruction are one access, not a hazard;
- blocks are always concurrent. A global access is ordered before another
  (of any thread) when the first one's block issued a __threadfence after it
  and the second one's block an atomic before it: the fence-then-flag
  pattern of the Guide's threadfence example, and data guarded by a lock.

`concurrent` is the rule for one pair; `find_races_reference` applies it to
every pair in plain Python; `find_races` is the numpy fast path, tested
against the reference.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .accesses import Rows, group_order

KINDS = ("write-after-write", "read-after-write", "write-after-read")
GROUP_CAP = 32      # accesses per location compared pairwise (the first, by emulation order)
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
                         acquire: Optional[np.ndarray] = None) -> dict:
    """{(kind, line, other_line): [count, row, other_row]} over every pair of
    rows with equal keys (plain Python; `release[i]`/`acquire[j]`: see the
    module docstring)."""
    tid = rows.thread(tpb)
    groups: dict = {}
    for i in range(len(rows)):
        groups.setdefault(tuple(int(k[i]) for k in keys), []).append(i)
    out: dict = {}
    for idx in groups.values():
        idx = sorted(idx, key=lambda i: int(rows.seq[i]))
        per: dict = {}
        kept = []
        for i in idx:
            per[int(rows.seq[i])] = per.get(int(rows.seq[i]), 0) + 1
            if per[int(rows.seq[i])] <= PER_RECORD:
                kept.append(i)
        idx = kept[:GROUP_CAP]
        for a in range(len(idx)):
            for b in range(a + 1, len(idx)):
                x, y = idx[a], idx[b]
                if tid[x] == tid[y]:
                    continue
                kind = hazard(rows.write[x], rows.atomic[x], rows.write[y], rows.atomic[y])
                if kind is None:
                    continue
                rel = bool(release is not None and release[x] and acquire[y])
                if not concurrent(rows.block[x], rows.epoch[x], rows.warp[x], rows.wsync[x], rows.seq[x],
                                  rows.block[y], rows.epoch[y], rows.warp[y], rows.wsync[y], rows.seq[y],
                                  its, rel):
                    continue
                line, other = lines_of(kind, int(rows.line[x]), int(rows.line[y]))
                first, second = (x, y) if line == rows.line[x] and kind != "write-after-read" else (y, x)
                e = out.setdefault((kind, line, other), [0, first, second])
                e[0] += 1
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


def find_races(rows: Rows, keys: tuple, tpb: int, its: bool,
               release: Optional[np.ndarray] = None, acquire: Optional[np.ndarray] = None) -> dict:
    """find_races_reference, vectorised: group rows by keys, keep groups with
    two threads and a write, compare their pairs with numpy."""
    n = len(rows)
    if n < 2:
        return {}
    order, starts = group_order(keys)
    sizes = np.diff(np.append(starts, n))
    big = sizes >= 2
    if not big.any():
        return {}
    tid = rows.thread(tpb)
    # only rows of groups with two or more rows take part from here on, and
    # of each warp-wide access in a group its first PER_RECORD lanes
    starts, sizes = starts[big], sizes[big]
    member = np.repeat(starts, sizes) + (np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes))
    order = order[member]
    gid = np.repeat(np.arange(len(starts)), sizes)
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
    wx, wy = rows.write[x], rows.write[y]
    ok = (tid[x] != tid[y]) & (wx | wy) & ~(rows.atomic[x] & rows.atomic[y])
    rel = (release[x] & acquire[y]) if release is not None else np.zeros(len(x), bool)
    same_block = rows.block[x] == rows.block[y]
    inblock = ((rows.epoch[x] == rows.epoch[y])
               & ((rows.warp[x] != rows.warp[y])
                  | (its & (rows.seq[x] != rows.seq[y]) & (rows.wsync[x] == rows.wsync[y]))))
    ok &= np.where(same_block, inblock, True) & ~rel
    x, y, wx, wy = x[ok], y[ok], wx[ok], wy[ok]
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
