"""One instruction stream per warp when the warp splits into fragments.

On presets with independent thread scheduling (sm_70+) a warp may split
into fragments (gpuemu/machine/thread_scheduling.py): each fragment is a
copy of the warp's frame that owns some of its lanes and counts its own
instructions on from the warp's count at the split. Its F_ICOUNT carries its
id in bits 32-63 (split_warp), so every request and stop point it records
names its fragment. The hardware still issues all of a warp's paths from
one warp slot, one instruction at a time (CUDA C Programming Guide,
"Independent Thread Scheduling": the scheduler interleaves the diverged
paths of a warp), so timing mode replays ONE stream per warp, built here
from the recorded points whatever order they arrived in:

- each fragment's points in its own order, each worth the instructions it
  executed since its previous point (the first since the split);
- barrier interval by barrier interval (a fragment starts in its parent's
  interval at the split): the fragments' points one fragment after the
  other, then one BARRIER (the warp waits once all its live fragments have
  arrived); one EXIT after everything (when the last fragment is gone).

The stream's length is the sum of what the fragments executed, which is
what the functional run counts as warp_instructions. Read as one stream
without this, the fragments' overlapping counts gave repeated positions and
one EXIT per fragment, and the engine replayed a wrong number of instructions.
"""
from __future__ import annotations

import numpy as np

from gpuemu.machine.thread_scheduling import FRAGMENT_COUNT_MASK, FRAGMENT_ID_SHIFT

MEM, BARRIER, EXIT = 0, 1, 2        # warp_trace's kinds


def merge_fragments(g: np.ndarray, at: np.ndarray, kind: np.ndarray, key: np.ndarray,
                    splits: list) -> tuple:
    """(at, key, keep) for the recorded points of all warps: g, raw F_ICOUNT
    `at`, kind and sort key per point; splits: (g, parent id, fragment id,
    parent's count at the split) in the order they happened. The points of
    split warps get positions in their merged stream, a key that sorts them
    in its order, and keep=False for the stop points the merge folds."""
    at, key = at.copy(), key.copy()
    keep = np.ones(g.size, bool)
    by_warp: dict = {}
    for w, parent, frag, count in splits:
        by_warp.setdefault(w, []).append((parent, frag, count))
    for w, sp in by_warp.items():
        idx = np.flatnonzero(g == w)
        pos, order, kept = _merge_warp(at[idx], kind[idx], sp)
        at[idx] = pos
        key[idx[order]] = np.arange(idx.size)
        keep[idx] = kept
    return at, key, keep


def _merge_warp(raw: np.ndarray, kind: np.ndarray, splits: list) -> tuple:
    """One warp: (position, merged order, keep) of its points."""
    fid = (raw >> FRAGMENT_ID_SHIFT) & FRAGMENT_COUNT_MASK
    count = raw & FRAGMENT_COUNT_MASK
    is_bar = kind == BARRIER
    frames = {0: (0, 0, 0)}               # id -> (count at its start, first interval, rank)
    for parent, frag, at_split in splits:
        _, interval, _ = frames[parent]
        before = np.count_nonzero((fid == parent) & is_bar & (count <= at_split))
        frames[frag] = (at_split, interval + before, len(frames))
    start = np.array([frames[int(f)][0] for f in fid], np.int64)
    first = np.array([frames[int(f)][1] for f in fid], np.int64)
    rank = np.array([frames[int(f)][2] for f in fid], np.int64)
    # a fragment's own order: by count, a stop point before a request at its count
    own = np.lexsort((kind != MEM, count, rank))
    inc = np.empty(raw.size, np.int64)
    interval = np.empty(raw.size, np.int64)
    new = np.ones(raw.size, bool)
    new[1:] = rank[own][1:] != rank[own][:-1]
    prev = np.where(new, start[own], np.roll(count[own], 1))
    inc[own] = count[own] - prev
    bars = np.where(is_bar[own], 1, 0)
    seen = np.cumsum(bars) - bars                          # barriers before, all fragments
    base = np.maximum.accumulate(np.where(new, seen, 0))   # ... before this fragment's first
    interval[own] = first[own] + seen - base
    interval[kind == EXIT] = np.iinfo(np.int64).max
    seq = np.empty(raw.size, np.int64)
    seq[own] = np.arange(raw.size)
    order = np.lexsort((seq, kind, interval))      # requests, then the barrier; exits last
    pos = np.empty(raw.size, np.int64)
    pos[order] = np.cumsum(inc[order])
    keep = np.ones(raw.size, bool)
    o_kind, o_int = kind[order], interval[order]
    last_of_group = np.ones(raw.size, bool)
    last_of_group[:-1] = (o_kind[1:] != o_kind[:-1]) | (o_int[1:] != o_int[:-1])
    keep[order] = (o_kind == MEM) | last_of_group
    return pos, order, keep
