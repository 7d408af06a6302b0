"""The first index of a range whose value reaches a bound, for many ranges at once.

`first_at_least(v, lo, hi, bound)` answers, per query k, the least i in
[lo[k], hi[k]) with v[i] >= bound[k] (-1: none), in O(B + log n) numpy work
per query: the values are cut into blocks of B; the query's first block is
searched whole, the blocks after it through a sparse table of block maxima
(binary lifting: the longest run of blocks all below the bound is skipped),
then the block that holds the answer. racecheck asks it for the first access
past a later access's witnesses that message passing does not order, several
rounds over the same values (`RangeMax`: the blocks and their table made
once). `first_at_least_reference` is the plain rule.
"""
from __future__ import annotations

import numpy as np

B = 64                  # values per block
QUERIES_AT_ONCE = 1 << 15


def first_at_least_reference(v, lo, hi, bound) -> list:
    """The least i in [lo[k], hi[k]) with v[i] >= bound[k], else -1, per k."""
    out = []
    for a, b, t in zip(lo, hi, bound):
        out.append(next((i for i in range(int(a), int(b)) if v[i] >= t), -1))
    return out


class _Blocks:
    """v in blocks of B, padded with the least int64, and a sparse table of
    the blocks' maxima (levels[k][j]: the max of blocks j .. j + 2^k - 1)."""

    def __init__(self, v: np.ndarray) -> None:
        n = len(v)
        nb = max(1, -(-n // B))
        self.padded = np.full(nb * B + B, np.iinfo(np.int64).min, np.int64)
        self.padded[:n] = v
        levels = [self.padded[:nb * B].reshape(nb, B).max(axis=1)]
        k = 1
        while 1 << k <= nb:
            prev, half = levels[-1], 1 << (k - 1)
            levels.append(np.maximum(prev[:-half], prev[half:]))
            k += 1
        self.levels, self.nb = levels, nb

    def scan(self, start: np.ndarray, stop: np.ndarray, bound: np.ndarray) -> np.ndarray:
        """The first i in [start, stop) with value >= bound, within B of start (-1: none)."""
        at = start[:, None] + np.arange(B)
        hit = (self.padded[np.minimum(at, len(self.padded) - 1)] >= bound[:, None]) & (at < stop[:, None])
        return np.where(hit.any(axis=1), start + hit.argmax(axis=1), -1)

    def first_block(self, block: np.ndarray, bound: np.ndarray) -> np.ndarray:
        """The first block at or after `block` whose max is >= bound (nb: none)."""
        pos = block.copy()
        for k in range(len(self.levels) - 1, -1, -1):
            span = 1 << k
            ok = pos + span <= self.nb
            at = np.minimum(pos, len(self.levels[k]) - 1)
            ok &= self.levels[k][at] < bound
            pos = np.where(ok, pos + span, pos)
        return pos


class RangeMax:
    """The values v, ready for first_at_least queries (their blocks and the
    blocks' sparse table made once)."""

    def __init__(self, v: np.ndarray) -> None:
        self.n = len(v)
        self.blocks = _Blocks(np.asarray(v, np.int64)) if self.n else None

    def first_at_least(self, lo, hi, bound) -> np.ndarray:
        """Per query k: the least i in [lo[k], hi[k]) with v[i] >= bound[k], else -1."""
        lo, hi, bound = (np.asarray(a, np.int64) for a in (lo, hi, bound))
        out = np.full(len(lo), -1, np.int64)
        if not self.n or not len(lo):
            return out
        blocks = self.blocks
        for s in range(0, len(lo), QUERIES_AT_ONCE):
            a, b, t = lo[s:s + QUERIES_AT_ONCE], hi[s:s + QUERIES_AT_ONCE], bound[s:s + QUERIES_AT_ONCE]
            live = a < b
            got = np.full(len(a), -1, np.int64)
            # the rest of the first block
            got[live] = blocks.scan(a[live], np.minimum(b[live], (a[live] // B + 1) * B), t[live])
            more = np.flatnonzero(live & (got < 0) & ((a // B + 1) * B < b))
            if len(more):
                blk = blocks.first_block(a[more] // B + 1, t[more])
                inside = blk * B < b[more]
                sel = more[inside]
                got[sel] = blocks.scan(blk[inside] * B, b[sel], t[sel])
            out[s:s + len(a)] = got
        return out


def first_at_least(v: np.ndarray, lo: np.ndarray, hi: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Per query k: the least i in [lo[k], hi[k]) with v[i] >= bound[k], else -1."""
    return RangeMax(v).first_at_least(lo, hi, bound)
